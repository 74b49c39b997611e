import type { ApiSchema } from '../message-schema';

/** Produce (key 0), v3–v7: RecordBatch (magic 2) only. acks=0 gets no response at all. */
export const PRODUCE: ApiSchema = {
  apiKey: 0,
  name: 'Produce',
  minVersion: 3,
  maxVersion: 7,
  request: [
    { name: 'transactionalId', type: 'string', versions: '3+', nullableVersions: '3+', default: null },
    { name: 'acks', type: 'int16', versions: '0+' },
    { name: 'timeoutMs', type: 'int32', versions: '0+' },
    {
      name: 'topicData',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'name', type: 'string', versions: '0+' },
        {
          name: 'partitionData',
          type: '[]',
          versions: '0+',
          fields: [
            { name: 'index', type: 'int32', versions: '0+' },
            { name: 'records', type: 'records', versions: '0+', nullableVersions: '0+' },
          ],
        },
      ],
    },
  ],
  response: [
    {
      name: 'responses',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'name', type: 'string', versions: '0+' },
        {
          name: 'partitionResponses',
          type: '[]',
          versions: '0+',
          fields: [
            { name: 'index', type: 'int32', versions: '0+' },
            { name: 'errorCode', type: 'int16', versions: '0+' },
            { name: 'baseOffset', type: 'int64', versions: '0+' },
            { name: 'logAppendTimeMs', type: 'int64', versions: '2+', default: -1 },
            { name: 'logStartOffset', type: 'int64', versions: '5+', default: -1 },
          ],
        },
      ],
    },
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
  ],
};

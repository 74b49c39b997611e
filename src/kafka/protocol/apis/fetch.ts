import type { ApiSchema } from '../message-schema';

/** Fetch (key 1), v4–v6: sessionless (sessions are v7+), RecordBatch records. */
export const FETCH: ApiSchema = {
  apiKey: 1,
  name: 'Fetch',
  minVersion: 4,
  maxVersion: 6,
  request: [
    { name: 'replicaId', type: 'int32', versions: '0+' },
    { name: 'maxWaitMs', type: 'int32', versions: '0+' },
    { name: 'minBytes', type: 'int32', versions: '0+' },
    { name: 'maxBytes', type: 'int32', versions: '3+', default: 0x7fffffff },
    { name: 'isolationLevel', type: 'int8', versions: '4+' },
    {
      name: 'topics',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'topic', type: 'string', versions: '0+' },
        {
          name: 'partitions',
          type: '[]',
          versions: '0+',
          fields: [
            { name: 'partition', type: 'int32', versions: '0+' },
            { name: 'fetchOffset', type: 'int64', versions: '0+' },
            { name: 'logStartOffset', type: 'int64', versions: '5+', default: -1 },
            { name: 'partitionMaxBytes', type: 'int32', versions: '0+' },
          ],
        },
      ],
    },
  ],
  response: [
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    {
      name: 'responses',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'topic', type: 'string', versions: '0+' },
        {
          name: 'partitions',
          type: '[]',
          versions: '0+',
          fields: [
            { name: 'partitionIndex', type: 'int32', versions: '0+' },
            { name: 'errorCode', type: 'int16', versions: '0+' },
            { name: 'highWatermark', type: 'int64', versions: '0+' },
            { name: 'lastStableOffset', type: 'int64', versions: '4+', default: -1 },
            { name: 'logStartOffset', type: 'int64', versions: '5+', default: -1 },
            {
              name: 'abortedTransactions',
              type: '[]',
              versions: '4+',
              nullableVersions: '4+',
              fields: [
                { name: 'producerId', type: 'int64', versions: '4+' },
                { name: 'firstOffset', type: 'int64', versions: '4+' },
              ],
            },
            { name: 'records', type: 'records', versions: '0+', nullableVersions: '0+' },
          ],
        },
      ],
    },
  ],
};

import type { ApiSchema } from '../message-schema';

/** CreateTopics (key 19), v0–v4. Manual assignments and configs are read and refused when given. */
export const CREATE_TOPICS: ApiSchema = {
  apiKey: 19,
  name: 'CreateTopics',
  minVersion: 0,
  maxVersion: 4,
  request: [
    {
      name: 'topics',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'name', type: 'string', versions: '0+' },
        { name: 'numPartitions', type: 'int32', versions: '0+' },
        { name: 'replicationFactor', type: 'int16', versions: '0+' },
        {
          name: 'assignments',
          type: '[]',
          versions: '0+',
          fields: [
            { name: 'partitionIndex', type: 'int32', versions: '0+' },
            { name: 'brokerIds', type: '[]int32', versions: '0+' },
          ],
        },
        {
          name: 'configs',
          type: '[]',
          versions: '0+',
          fields: [
            { name: 'name', type: 'string', versions: '0+' },
            { name: 'value', type: 'string', versions: '0+', nullableVersions: '0+' },
          ],
        },
      ],
    },
    { name: 'timeoutMs', type: 'int32', versions: '0+' },
    { name: 'validateOnly', type: 'boolean', versions: '1+' },
  ],
  response: [
    { name: 'throttleTimeMs', type: 'int32', versions: '2+' },
    {
      name: 'topics',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'name', type: 'string', versions: '0+' },
        { name: 'errorCode', type: 'int16', versions: '0+' },
        { name: 'errorMessage', type: 'string', versions: '1+', nullableVersions: '0+', default: null },
      ],
    },
  ],
};

import type { ApiSchema } from '../message-schema';

/** ListOffsets (key 2), v1–v3: one offset per partition (v0's offset lists are not served). */
export const LIST_OFFSETS: ApiSchema = {
  apiKey: 2,
  name: 'ListOffsets',
  minVersion: 1,
  maxVersion: 3,
  request: [
    { name: 'replicaId', type: 'int32', versions: '0+' },
    { name: 'isolationLevel', type: 'int8', versions: '2+' },
    {
      name: 'topics',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'name', type: 'string', versions: '0+' },
        {
          name: 'partitions',
          type: '[]',
          versions: '0+',
          fields: [
            { name: 'partitionIndex', type: 'int32', versions: '0+' },
            { name: 'timestamp', type: 'int64', versions: '0+' },
          ],
        },
      ],
    },
  ],
  response: [
    { name: 'throttleTimeMs', type: 'int32', versions: '2+' },
    {
      name: 'topics',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'name', type: 'string', versions: '0+' },
        {
          name: 'partitions',
          type: '[]',
          versions: '0+',
          fields: [
            { name: 'partitionIndex', type: 'int32', versions: '0+' },
            { name: 'errorCode', type: 'int16', versions: '0+' },
            { name: 'timestamp', type: 'int64', versions: '1+', default: -1 },
            { name: 'offset', type: 'int64', versions: '1+', default: -1 },
          ],
        },
      ],
    },
  ],
};

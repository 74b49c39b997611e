import type { ApiSchema } from '../message-schema';

/**
 * OffsetFetch (key 9), v1–v5. From v2 null topics means every committed partition and a top-level error
 * code is answered; v5 adds the committed leader epoch.
 */
export const OFFSET_FETCH: ApiSchema = {
  apiKey: 9,
  name: 'OffsetFetch',
  minVersion: 1,
  maxVersion: 5,
  request: [
    { name: 'groupId', type: 'string', versions: '0+' },
    {
      name: 'topics',
      type: '[]',
      versions: '0+',
      nullableVersions: '2+',
      fields: [
        { name: 'name', type: 'string', versions: '0+' },
        { name: 'partitionIndexes', type: '[]int32', versions: '0+' },
      ],
    },
  ],
  response: [
    { name: 'throttleTimeMs', type: 'int32', versions: '3+' },
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
            { name: 'committedOffset', type: 'int64', versions: '0+' },
            { name: 'committedLeaderEpoch', type: 'int32', versions: '5+', default: -1 },
            { name: 'metadata', type: 'string', versions: '0+', nullableVersions: '0+' },
            { name: 'errorCode', type: 'int16', versions: '0+' },
          ],
        },
      ],
    },
    { name: 'errorCode', type: 'int16', versions: '2+' },
  ],
};

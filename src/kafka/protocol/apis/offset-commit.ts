import type { ApiSchema } from '../message-schema';

/** OffsetCommit (key 8), v2–v5. retentionTimeMs is v2–v4 (ignored: the broker's retention applies). */
export const OFFSET_COMMIT: ApiSchema = {
  apiKey: 8,
  name: 'OffsetCommit',
  minVersion: 2,
  maxVersion: 5,
  request: [
    { name: 'groupId', type: 'string', versions: '0+' },
    { name: 'generationId', type: 'int32', versions: '1+', default: -1 },
    { name: 'memberId', type: 'string', versions: '1+' },
    { name: 'retentionTimeMs', type: 'int64', versions: '2-4', default: -1 },
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
            {
              name: 'committedMetadata',
              type: 'string',
              versions: '0+',
              nullableVersions: '0+',
            },
          ],
        },
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
            { name: 'errorCode', type: 'int16', versions: '0+' },
          ],
        },
      ],
    },
  ],
};

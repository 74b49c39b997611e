import type { ApiSchema } from '../message-schema';

/** SyncGroup (key 14), v0–v3. */
export const SYNC_GROUP: ApiSchema = {
  apiKey: 14,
  name: 'SyncGroup',
  minVersion: 0,
  maxVersion: 3,
  request: [
    { name: 'groupId', type: 'string', versions: '0+' },
    { name: 'generationId', type: 'int32', versions: '0+' },
    { name: 'memberId', type: 'string', versions: '0+' },
    { name: 'groupInstanceId', type: 'string', versions: '3+', nullableVersions: '3+', default: null },
    {
      name: 'assignments',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'memberId', type: 'string', versions: '0+' },
        { name: 'assignment', type: 'bytes', versions: '0+' },
      ],
    },
  ],
  response: [
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    { name: 'errorCode', type: 'int16', versions: '0+' },
    { name: 'assignment', type: 'bytes', versions: '0+' },
  ],
};

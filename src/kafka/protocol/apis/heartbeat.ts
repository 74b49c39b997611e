import type { ApiSchema } from '../message-schema';

/** Heartbeat (key 12), v0–v3. */
export const HEARTBEAT: ApiSchema = {
  apiKey: 12,
  name: 'Heartbeat',
  minVersion: 0,
  maxVersion: 3,
  request: [
    { name: 'groupId', type: 'string', versions: '0+' },
    { name: 'generationId', type: 'int32', versions: '0+' },
    { name: 'memberId', type: 'string', versions: '0+' },
    { name: 'groupInstanceId', type: 'string', versions: '3+', nullableVersions: '3+', default: null },
  ],
  response: [
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    { name: 'errorCode', type: 'int16', versions: '0+' },
  ],
};

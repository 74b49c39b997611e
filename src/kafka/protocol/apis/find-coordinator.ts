import type { ApiSchema } from '../message-schema';

/** FindCoordinator (key 10), v0–v2: one key per request (batched keys are v4+). */
export const FIND_COORDINATOR: ApiSchema = {
  apiKey: 10,
  name: 'FindCoordinator',
  minVersion: 0,
  maxVersion: 2,
  request: [
    { name: 'key', type: 'string', versions: '0+' },
    { name: 'keyType', type: 'int8', versions: '1+' },
  ],
  response: [
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    { name: 'errorCode', type: 'int16', versions: '0+' },
    { name: 'errorMessage', type: 'string', versions: '1+', nullableVersions: '1+', default: null },
    { name: 'nodeId', type: 'int32', versions: '0+' },
    { name: 'host', type: 'string', versions: '0+' },
    { name: 'port', type: 'int32', versions: '0+' },
  ],
};

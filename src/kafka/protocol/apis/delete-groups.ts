import type { ApiSchema } from '../message-schema';

/** DeleteGroups (key 42), v0–v1. */
export const DELETE_GROUPS: ApiSchema = {
  apiKey: 42,
  name: 'DeleteGroups',
  minVersion: 0,
  maxVersion: 1,
  request: [{ name: 'groupsNames', type: '[]string', versions: '0+' }],
  response: [
    { name: 'throttleTimeMs', type: 'int32', versions: '0+' },
    {
      name: 'results',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'groupId', type: 'string', versions: '0+' },
        { name: 'errorCode', type: 'int16', versions: '0+' },
      ],
    },
  ],
};

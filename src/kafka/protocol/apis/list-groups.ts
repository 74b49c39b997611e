import type { ApiSchema } from '../message-schema';

/** ListGroups (key 16), v0–v2 (the states filter is v4+). */
export const LIST_GROUPS: ApiSchema = {
  apiKey: 16,
  name: 'ListGroups',
  minVersion: 0,
  maxVersion: 2,
  request: [],
  response: [
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    { name: 'errorCode', type: 'int16', versions: '0+' },
    {
      name: 'groups',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'groupId', type: 'string', versions: '0+' },
        { name: 'protocolType', type: 'string', versions: '0+' },
      ],
    },
  ],
};

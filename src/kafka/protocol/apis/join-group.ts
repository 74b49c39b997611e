import type { ApiSchema } from '../message-schema';

/** JoinGroup (key 11), v0–v5. v1 adds the rebalance timeout, v4 MEMBER_ID_REQUIRED, v5 static members. */
export const JOIN_GROUP: ApiSchema = {
  apiKey: 11,
  name: 'JoinGroup',
  minVersion: 0,
  maxVersion: 5,
  request: [
    { name: 'groupId', type: 'string', versions: '0+' },
    { name: 'sessionTimeoutMs', type: 'int32', versions: '0+' },
    { name: 'rebalanceTimeoutMs', type: 'int32', versions: '1+', default: -1 },
    { name: 'memberId', type: 'string', versions: '0+' },
    { name: 'groupInstanceId', type: 'string', versions: '5+', nullableVersions: '5+', default: null },
    { name: 'protocolType', type: 'string', versions: '0+' },
    {
      name: 'protocols',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'name', type: 'string', versions: '0+' },
        { name: 'metadata', type: 'bytes', versions: '0+' },
      ],
    },
  ],
  response: [
    { name: 'throttleTimeMs', type: 'int32', versions: '2+' },
    { name: 'errorCode', type: 'int16', versions: '0+' },
    { name: 'generationId', type: 'int32', versions: '0+', default: -1 },
    { name: 'protocolName', type: 'string', versions: '0+' },
    { name: 'leader', type: 'string', versions: '0+' },
    { name: 'memberId', type: 'string', versions: '0+' },
    {
      name: 'members',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'memberId', type: 'string', versions: '0+' },
        { name: 'groupInstanceId', type: 'string', versions: '5+', nullableVersions: '5+', default: null },
        { name: 'metadata', type: 'bytes', versions: '0+' },
      ],
    },
  ],
};

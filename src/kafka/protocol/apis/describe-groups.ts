import type { ApiSchema } from '../message-schema';

/** DescribeGroups (key 15), v0–v2. */
export const DESCRIBE_GROUPS: ApiSchema = {
  apiKey: 15,
  name: 'DescribeGroups',
  minVersion: 0,
  maxVersion: 2,
  request: [{ name: 'groups', type: '[]string', versions: '0+' }],
  response: [
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    {
      name: 'groups',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'errorCode', type: 'int16', versions: '0+' },
        { name: 'groupId', type: 'string', versions: '0+' },
        { name: 'groupState', type: 'string', versions: '0+' },
        { name: 'protocolType', type: 'string', versions: '0+' },
        { name: 'protocolData', type: 'string', versions: '0+' },
        {
          name: 'members',
          type: '[]',
          versions: '0+',
          fields: [
            { name: 'memberId', type: 'string', versions: '0+' },
            { name: 'clientId', type: 'string', versions: '0+' },
            { name: 'clientHost', type: 'string', versions: '0+' },
            { name: 'memberMetadata', type: 'bytes', versions: '0+' },
            { name: 'memberAssignment', type: 'bytes', versions: '0+' },
          ],
        },
      ],
    },
  ],
};

import type { ApiSchema } from '../message-schema';

/** LeaveGroup (key 13), v0–v1: one member per request (the members array is v3+). */
export const LEAVE_GROUP: ApiSchema = {
  apiKey: 13,
  name: 'LeaveGroup',
  minVersion: 0,
  maxVersion: 1,
  request: [
    { name: 'groupId', type: 'string', versions: '0+' },
    { name: 'memberId', type: 'string', versions: '0-2' },
  ],
  response: [
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    { name: 'errorCode', type: 'int16', versions: '0+' },
  ],
};

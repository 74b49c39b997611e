import type { ApiSchema } from '../message-schema';

/**
 * Metadata (key 3), v0–v4. In v0 an empty topic list means every topic; from v1 null means every topic and
 * empty means none. v4 adds allowAutoTopicCreation.
 */
export const METADATA: ApiSchema = {
  apiKey: 3,
  name: 'Metadata',
  minVersion: 0,
  maxVersion: 4,
  request: [
    {
      name: 'topics',
      type: '[]',
      versions: '0+',
      nullableVersions: '1+',
      fields: [{ name: 'name', type: 'string', versions: '0+' }],
    },
    { name: 'allowAutoTopicCreation', type: 'boolean', versions: '4+', default: true },
  ],
  response: [
    { name: 'throttleTimeMs', type: 'int32', versions: '3+' },
    {
      name: 'brokers',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'nodeId', type: 'int32', versions: '0+' },
        { name: 'host', type: 'string', versions: '0+' },
        { name: 'port', type: 'int32', versions: '0+' },
        { name: 'rack', type: 'string', versions: '1+', nullableVersions: '1+', default: null },
      ],
    },
    { name: 'clusterId', type: 'string', versions: '2+', nullableVersions: '2+', default: null },
    { name: 'controllerId', type: 'int32', versions: '1+', default: -1 },
    {
      name: 'topics',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'errorCode', type: 'int16', versions: '0+' },
        { name: 'name', type: 'string', versions: '0+' },
        { name: 'isInternal', type: 'boolean', versions: '1+', default: false },
        {
          name: 'partitions',
          type: '[]',
          versions: '0+',
          fields: [
            { name: 'errorCode', type: 'int16', versions: '0+' },
            { name: 'partitionIndex', type: 'int32', versions: '0+' },
            { name: 'leaderId', type: 'int32', versions: '0+' },
            { name: 'replicaNodes', type: '[]int32', versions: '0+' },
            { name: 'isrNodes', type: '[]int32', versions: '0+' },
          ],
        },
      ],
    },
  ],
};

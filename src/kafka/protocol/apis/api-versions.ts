import type { ApiSchema } from '../message-schema';

/** ApiVersions (key 18). v3 is flexible (KIP-511: ClientSoftwareName/Version); its response header is v0. */
export const API_VERSIONS: ApiSchema = {
  apiKey: 18,
  name: 'ApiVersions',
  minVersion: 0,
  maxVersion: 3,
  flexibleFrom: 3,
  request: [
    { name: 'clientSoftwareName', type: 'string', versions: '3+' },
    { name: 'clientSoftwareVersion', type: 'string', versions: '3+' },
  ],
  response: [
    { name: 'errorCode', type: 'int16', versions: '0+' },
    {
      name: 'apiKeys',
      type: '[]',
      versions: '0+',
      fields: [
        { name: 'apiKey', type: 'int16', versions: '0+' },
        { name: 'minVersion', type: 'int16', versions: '0+' },
        { name: 'maxVersion', type: 'int16', versions: '0+' },
      ],
    },
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
  ],
};

import { clientHostOf } from '../../../src/server/client-host';

describe('clientHostOf', () => {
  it.each([
    ['127.0.0.1:52144', '127.0.0.1'],
    ['::1:52144', '::1'],
    ['::ffff:127.0.0.1:80', '::ffff:127.0.0.1'],
    ['[::1]:52144', '::1'],
    ['ipv4:10.0.0.1:80', '10.0.0.1'],
    ['ipv6:[fe80::1]:80', 'fe80::1'],
    ['unknown', 'unknown'],
  ])('reads the host of peer %s as %s', (peer, host) => {
    expect(clientHostOf(peer)).toBe(host);
  });
});

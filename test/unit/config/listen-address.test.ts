import { parseListenAddress } from '../../../src/config';

describe('parseListenAddress', () => {
  it('splits host and port, keeping IPv6 brackets', () => {
    expect(parseListenAddress('127.0.0.1:7070')).toEqual({ host: '127.0.0.1', port: 7070 });
    expect(parseListenAddress('[::1]:0')).toEqual({ host: '[::1]', port: 0 });
    expect(parseListenAddress('localhost:65535')).toEqual({ host: 'localhost', port: 65535 });
  });

  it('returns undefined for a missing host, a missing or out-of-range port, or unbracketed IPv6', () => {
    for (const text of ['', ':1', 'host', 'host:', 'host:65536', 'host:1x', '::1:80', '-host:1', 'a/b:1']) {
      expect(parseListenAddress(text)).toBeUndefined();
    }
  });
});

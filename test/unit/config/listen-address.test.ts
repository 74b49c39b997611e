import { isLoopbackListen, parseListenAddress, parseUnixSocket } from '../../../src/config';

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

describe('parseUnixSocket', () => {
  it('reads the relative and absolute forms grpc-js takes', () => {
    expect(parseUnixSocket('unix:cohort.sock')).toBe('cohort.sock');
    expect(parseUnixSocket('unix:/run/cohort.sock')).toBe('/run/cohort.sock');
    expect(parseUnixSocket('unix:///run/cohort.sock')).toBe('/run/cohort.sock');
  });

  it('returns undefined without a path or without the unix: scheme', () => {
    for (const text of ['unix:', 'unix://', 'unix:  ', 'cohort.sock', '127.0.0.1:1', 'unix:a\0b']) {
      expect(parseUnixSocket(text)).toBeUndefined();
    }
  });
});

describe('isLoopbackListen', () => {
  it('is true for Unix sockets, localhost, 127.0.0.0/8 and [::1]', () => {
    for (const text of ['unix:c.sock', 'localhost:1', '127.0.0.1:0', '127.255.0.9:80', '[::1]:7070']) {
      expect(isLoopbackListen(text)).toBe(true);
    }
  });

  it('is false for wildcard, interface and named addresses, and for text that is no address', () => {
    for (const text of ['0.0.0.0:1', '[::]:1', '10.0.0.1:1', 'cohort.internal:1', '128.0.0.1:1', 'nowhere']) {
      expect(isLoopbackListen(text)).toBe(false);
    }
  });
});

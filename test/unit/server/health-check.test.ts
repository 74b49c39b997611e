import { probeAddressOf } from '../../../src/server/health-check';

describe('probeAddressOf', () => {
  it('reaches a wildcard listener on loopback and any other one where it listens', () => {
    expect(probeAddressOf('0.0.0.0:7070')).toBe('127.0.0.1:7070');
    expect(probeAddressOf('[::]:7070')).toBe('[::1]:7070');
    expect(probeAddressOf('10.1.2.3:7070')).toBe('10.1.2.3:7070');
    expect(probeAddressOf('unix:/run/cohort.sock')).toBe('unix:/run/cohort.sock');
  });

  it('cannot probe port 0 or an address that does not parse', () => {
    expect(probeAddressOf('127.0.0.1:0')).toBeUndefined();
    expect(probeAddressOf('nowhere')).toBeUndefined();
  });
});

import { ErrorCode } from '../../../src/errors';
import { ignoreIpServerNameWarning } from '../../../src/client/ip-server-name-warning';
import { ServerUnreachableError, unreachableReasonOf } from '../../../src/client/server-unreachable-error';

describe('ServerUnreachableError', () => {
  it('is a retriable COORDINATOR_NOT_AVAILABLE that says where, what and the transport’s words', () => {
    const error = new ServerUnreachableError(
      '127.0.0.1:7070',
      'refused',
      'connect ECONNREFUSED 127.0.0.1:7070',
    );
    expect(error.code).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(error.retriable).toBe(true);
    expect(error.message).toBe(
      'cannot reach 127.0.0.1:7070: connection refused (connect ECONNREFUSED 127.0.0.1:7070)',
    );
  });

  it.each([
    ['No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1.', false, 'refused'],
    ['Name resolution failed for target dns:nosuchhost.invalid:7070', false, 'unresolved'],
    [
      'No connection established. Last error: Error: unable to verify the first certificate.',
      true,
      'tls-handshake',
    ],
    ['Last error: ...:SSL routines:ssl3_get_record:wrong version number:...', true, 'tls-handshake'],
    [
      "Error [ERR_TLS_CERT_ALTNAME_INVALID]: Hostname/IP does not match certificate's altnames",
      true,
      'tls-handshake',
    ],
    [
      'No connection established. Last error: Failed to connect (2026-12-01T20:00:53.963Z).',
      true,
      'tls-handshake',
    ],
    [
      'No connection established. Last error: Failed to connect (2026-12-01T20:00:53.963Z).',
      false,
      'connection-failed',
    ],
  ] as const)('reads %j (TLS %s) as %s', (details, isTls, reason) => {
    expect(unreachableReasonOf(details, isTls)).toBe(reason);
  });
});

describe('ignoreIpServerNameWarning', () => {
  it('drops DEP0123 however it is emitted, and passes every other warning on', () => {
    const emitted: unknown[][] = [];
    const target = {
      emitWarning: (...args: unknown[]) => void emitted.push(args),
    } as unknown as NodeJS.Process;
    ignoreIpServerNameWarning(target);
    ignoreIpServerNameWarning(target); // idempotent: wrapped once
    target.emitWarning('Setting the TLS ServerName to an IP address ...', 'DeprecationWarning', 'DEP0123');
    target.emitWarning('Setting the TLS ServerName to an IP address ...', {
      type: 'DeprecationWarning',
      code: 'DEP0123',
    });
    target.emitWarning('something else', 'DeprecationWarning', 'DEP0005');
    target.emitWarning('a plain warning');
    expect(emitted).toEqual([['something else', 'DeprecationWarning', 'DEP0005'], ['a plain warning']]);
  });
});

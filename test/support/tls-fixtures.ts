import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Paths of throwaway PEM files, and their contents for grpc-js clients. */
export interface TlsFixtures {
  readonly dir: string;
  /** The CA that signed the server and the trusted client. */
  readonly caCertPath: string;
  readonly serverCertPath: string;
  readonly serverKeyPath: string;
  /** A client certificate the CA signed (mutual TLS accepts it). */
  readonly clientCertPath: string;
  readonly clientKeyPath: string;
  /** A client certificate signed by another CA (mutual TLS refuses it). */
  readonly strangerCertPath: string;
  readonly strangerKeyPath: string;
  /** A server certificate the CA signed for `cohort-node.internal` only: no loopback name or address. */
  readonly namedServerCertPath: string;
  readonly namedServerKeyPath: string;
  /** A self-signed server certificate for `cohort-node.internal` only. */
  readonly selfSignedNamedCertPath: string;
  readonly selfSignedNamedKeyPath: string;
  read(path: string): Buffer;
  /** Removes every file. Call it in afterAll. */
  cleanup(): void;
}

function openssl(dir: string, args: readonly string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A P-256 key and a certificate for `subject`, signed by `ca` (or self-signed when `ca` is undefined). */
function issue(dir: string, name: string, subject: string, extensions: string, ca?: string): void {
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`];
  if (ca === undefined) {
    const addExt = extensions === '' ? [] : ['-addext', extensions.trim()];
    openssl(dir, [
      'req',
      '-x509',
      ...newKey,
      '-out',
      `${name}.pem`,
      '-subj',
      subject,
      '-days',
      '1',
      ...addExt,
    ]);
    return;
  }
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(dir, ['req', ...newKey, '-out', `${name}.csr`, '-subj', subject]);
  const signed = ['-out', `${name}.pem`, '-days', '1', '-extfile', `${name}.ext`];
  openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}.key`, ...signed]);
}

/**
 * Generates, with the system's `openssl`, a CA, a server certificate for localhost and 127.0.0.1, a client
 * certificate from the same CA and one from a stranger CA, into a fresh temporary directory. Nothing is
 * committed: every run makes its own keys and `cleanup()` deletes them.
 */
export function makeTlsFixtures(): TlsFixtures {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-tls-'));
  try {
    issue(dir, 'ca', '/CN=cohort-test-ca', '');
    issue(dir, 'server', '/CN=localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1\n', 'ca');
    issue(dir, 'client', '/CN=cohort-test-client', 'extendedKeyUsage=clientAuth\n', 'ca');
    issue(dir, 'stranger-ca', '/CN=stranger-ca', '');
    issue(dir, 'stranger', '/CN=stranger', 'extendedKeyUsage=clientAuth\n', 'stranger-ca');
    issue(dir, 'named', '/CN=cohort-node.internal', 'subjectAltName=DNS:cohort-node.internal\n', 'ca');
    issue(dir, 'self-named', '/CN=cohort-node.internal', 'subjectAltName=DNS:cohort-node.internal\n');
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`could not generate test certificates with openssl: ${(error as Error).message}`);
  }
  const at = (file: string): string => join(dir, file);
  return {
    dir,
    caCertPath: at('ca.pem'),
    serverCertPath: at('server.pem'),
    serverKeyPath: at('server.key'),
    clientCertPath: at('client.pem'),
    clientKeyPath: at('client.key'),
    strangerCertPath: at('stranger.pem'),
    strangerKeyPath: at('stranger.key'),
    namedServerCertPath: at('named.pem'),
    namedServerKeyPath: at('named.key'),
    selfSignedNamedCertPath: at('self-named.pem'),
    selfSignedNamedKeyPath: at('self-named.key'),
    read: (path) => readFileSync(path),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

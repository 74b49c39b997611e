import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConfig, InvalidConfigError } from '../../../src/config';
import { loadServerSecurity } from '../../../src/server/server-security';
import type { TlsFixtures } from '../../support/tls-fixtures';
import { makeTlsFixtures } from '../../support/tls-fixtures';

const TOKEN = 'token-from-a-file-0123456789';

function problemsOf(run: () => unknown): readonly string[] {
  try {
    run();
  } catch (error) {
    if (error instanceof InvalidConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected an InvalidConfigError');
}

describe('loadServerSecurity', () => {
  let tls: TlsFixtures;
  let dir: string;

  beforeAll(() => {
    tls = makeTlsFixtures();
    dir = mkdtempSync(join(tmpdir(), 'cohort-security-'));
  });
  afterAll(() => {
    tls.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const file = (name: string, contents: string): string => {
    const path = join(dir, name);
    writeFileSync(path, contents);
    return path;
  };

  it('is plaintext without a token by default', () => {
    const security = loadServerSecurity(createConfig());
    expect(security).toMatchObject({ isTls: false, isMutualTls: false, tokenCheck: undefined });
  });

  it('serves TLS, and mutual TLS with a client CA', () => {
    const server = { tlsCert: tls.serverCertPath, tlsKey: tls.serverKeyPath };
    expect(loadServerSecurity(createConfig(server))).toMatchObject({ isTls: true, isMutualTls: false });
    expect(loadServerSecurity(createConfig({ ...server, tlsClientCa: tls.caCertPath }))).toMatchObject({
      isTls: true,
      isMutualTls: true,
    });
  });

  it('reads a token file without its trailing newline', () => {
    const security = loadServerSecurity(createConfig({ tokenFile: file('token', `${TOKEN}\r\n`) }));
    expect(security.tokenCheck).toBeDefined();
  });

  it('lists every problem with the files at once, and never their contents', () => {
    const shortToken = file('short', 'hunter2\n');
    const notPem = file('not.pem', 'certainly not a certificate');
    const problems = problemsOf(() =>
      loadServerSecurity(
        createConfig({
          tokenFile: shortToken,
          tlsCert: notPem,
          tlsKey: tls.serverKeyPath,
          tlsClientCa: join(dir, 'missing.pem'),
        }),
      ),
    );
    expect(problems).toEqual([
      `--token-file (${shortToken}) must hold at least 16 characters, got 7`,
      `--tls-client-ca (${join(dir, 'missing.pem')}) cannot be read (ENOENT)`,
      expect.stringContaining(`--tls-cert (${notPem}), --tls-key (${tls.serverKeyPath}) are not usable PEM`),
    ]);
    expect(problems.join('\n')).not.toContain('hunter2');
    expect(problems.join('\n')).not.toContain('certainly not');
  });

  it('refuses a key that does not belong to its certificate', () => {
    const problems = problemsOf(() =>
      loadServerSecurity(createConfig({ tlsCert: tls.serverCertPath, tlsKey: tls.clientKeyPath })),
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('are not usable PEM');
  });

  it('refuses an empty token file and one with spaces', () => {
    expect(problemsOf(() => loadServerSecurity(createConfig({ tokenFile: file('empty', '\n') })))).toEqual([
      `--token-file (${join(dir, 'empty')}) is empty`,
    ]);
    expect(
      problemsOf(() =>
        loadServerSecurity(createConfig({ tokenFile: file('spaced', 'has some spaces in it') })),
      ),
    ).toEqual([
      `--token-file (${join(dir, 'spaced')}) must hold printable ASCII without spaces: it travels in an HTTP header`,
    ]);
  });
});

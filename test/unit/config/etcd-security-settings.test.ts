import type { LoadConfigResult } from '../../../src/config';
import { createConfig, helpText, InvalidConfigError, loadConfig } from '../../../src/config';
import { isPrivateHost } from '../../../src/config/etcd-endpoints';
import { TEST_CLUSTER_SECRET_ENV as SECRET } from '../../support/cluster-secret';

function errorsOf(result: LoadConfigResult): readonly string[] {
  if (!('errors' in result)) throw new Error(`expected errors, got ${JSON.stringify(result)}`);
  return result.errors;
}

function configOf(
  result: LoadConfigResult,
): NonNullable<Extract<LoadConfigResult, { config: unknown }>['config']> {
  if (!('config' in result) || result.config === undefined) {
    throw new Error(`expected a config, got ${JSON.stringify(result)}`);
  }
  return result.config;
}

const NODE = ['--node-id', '1'];
const HTTPS = ['--etcd-endpoints', 'https://10.0.0.1:2379', ...NODE];
const CA = ['--etcd-tls-ca', '/etc/cohort/etcd-ca.pem'];
const PASSWORD = 'etcd password with spaces';

describe('the etcd client security settings', () => {
  it('default to plain etcd: no CA, no client certificate, no user', () => {
    expect(createConfig({})).toMatchObject({
      etcdTlsCa: '',
      etcdTlsCert: '',
      etcdTlsKey: '',
      etcdUsername: '',
      etcdPasswordFile: '',
      etcdPassword: '',
    });
  });

  it('read https:// endpoints, the TLS files and the user from flags, and each from its COHORT_ twin', () => {
    const flags = [
      ...HTTPS,
      ...CA,
      '--etcd-tls-cert',
      'c.pem',
      '--etcd-tls-key',
      'k.pem',
      '--etcd-username',
      'cohort',
      '--etcd-password-file',
      'p',
    ];
    const expected = {
      etcdEndpoints: ['https://10.0.0.1:2379'],
      etcdTlsCa: '/etc/cohort/etcd-ca.pem',
      etcdTlsCert: 'c.pem',
      etcdTlsKey: 'k.pem',
      etcdUsername: 'cohort',
      etcdPasswordFile: 'p',
    };
    expect(configOf(loadConfig(flags, SECRET))).toMatchObject(expected);
    const env = {
      ...SECRET,
      COHORT_ETCD_ENDPOINTS: 'https://10.0.0.1:2379',
      COHORT_ETCD_TLS_CA: '/etc/cohort/etcd-ca.pem',
      COHORT_ETCD_TLS_CERT: 'c.pem',
      COHORT_ETCD_TLS_KEY: 'k.pem',
      COHORT_ETCD_USERNAME: 'cohort',
      COHORT_ETCD_PASSWORD_FILE: 'p',
    };
    expect(configOf(loadConfig(NODE, env))).toMatchObject(expected);
  });

  it('takes the password from COHORT_ETCD_PASSWORD, as etcd has it (spaces, any length), never from a flag', () => {
    const config = configOf(
      loadConfig([...HTTPS, ...CA, '--etcd-username', 'cohort'], {
        ...SECRET,
        COHORT_ETCD_PASSWORD: PASSWORD,
      }),
    );
    expect(config.etcdPassword).toBe(PASSWORD);
    const errors = errorsOf(loadConfig([...HTTPS, ...CA, '--etcd-password', PASSWORD], SECRET));
    expect(errors).toEqual([
      '--etcd-password is not accepted on the command line, which every user of the machine can read; set ' +
        'COHORT_ETCD_PASSWORD in the environment or give --etcd-password-file',
    ]);
    expect(errors.join('\n')).not.toContain('spaces');
    expect(helpText()).toContain('COHORT_ETCD_PASSWORD=PASSWORD');
    expect(helpText()).not.toContain('--etcd-password ');
  });

  it('never shows the password, whatever the problem', () => {
    let thrown: unknown;
    try {
      createConfig({ etcdPassword: PASSWORD, etcdPasswordFile: 'p' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidConfigError);
    expect((thrown as InvalidConfigError).problems).toEqual([
      "etcdPasswordFile ('p'), etcdPassword are for the etcd client, and there is no etcd: give " +
        '--etcd-endpoints too, or leave them out',
    ]);
    const errors = errorsOf(
      loadConfig([...HTTPS, ...CA, '--etcd-password-file', 'p'], {
        ...SECRET,
        COHORT_ETCD_PASSWORD: PASSWORD,
      }),
    );
    expect(errors).toEqual([
      "--etcd-password-file ('p') is the password of an etcd user: give --etcd-username too",
      "give the etcd password once: COHORT_ETCD_PASSWORD or --etcd-password-file ('p'), not both",
    ]);
    expect([...errors, ...(thrown as InvalidConfigError).problems].join('\n')).not.toContain(PASSWORD);
  });

  it('refuses a user without a password, saying where the password goes', () => {
    expect(errorsOf(loadConfig([...HTTPS, ...CA, '--etcd-username', 'cohort'], SECRET))).toEqual([
      "--etcd-username ('cohort') needs its password: give --etcd-password-file or COHORT_ETCD_PASSWORD",
    ]);
    expect(errorsOf(loadConfig([...HTTPS, ...CA], { ...SECRET, COHORT_ETCD_PASSWORD: PASSWORD }))).toEqual([
      'COHORT_ETCD_PASSWORD is the password of an etcd user: give --etcd-username too',
    ]);
  });

  it('refuses a user name with control characters', () => {
    expect(
      errorsOf(
        loadConfig([...HTTPS, ...CA, '--etcd-username', 'co\thort', '--etcd-password-file', 'p'], SECRET),
      ),
    ).toEqual(["--etcd-username ('co\thort') must be text without control characters"]);
  });

  it('refuses a client certificate without its key and a key without its certificate', () => {
    expect(errorsOf(loadConfig([...HTTPS, ...CA, '--etcd-tls-cert', 'c.pem'], SECRET))).toEqual([
      "--etcd-tls-cert ('c.pem') needs its twin: give --etcd-tls-cert and --etcd-tls-key together",
    ]);
    expect(errorsOf(loadConfig([...HTTPS, ...CA], { ...SECRET, COHORT_ETCD_TLS_KEY: 'k.pem' }))).toEqual([
      "COHORT_ETCD_TLS_KEY ('k.pem') needs its twin: give --etcd-tls-cert and --etcd-tls-key together",
    ]);
  });

  it('refuses TLS files with plain http:// endpoints', () => {
    expect(
      errorsOf(
        loadConfig(
          [
            '--etcd-endpoints',
            'http://10.0.0.1:2379',
            ...NODE,
            ...CA,
            '--etcd-tls-cert',
            'c',
            '--etcd-tls-key',
            'k',
          ],
          SECRET,
        ),
      ),
    ).toEqual([
      "--etcd-tls-ca ('/etc/cohort/etcd-ca.pem'), --etcd-tls-cert ('c'), --etcd-tls-key ('k') are for TLS to " +
        "etcd, and --etcd-endpoints ('http://10.0.0.1:2379') is plain http: give https://HOST:PORT endpoints " +
        '(etcd serving --listen-client-urls https://...), or leave the TLS files out',
    ]);
  });

  it('refuses endpoints that mix http:// and https://', () => {
    expect(
      errorsOf(
        loadConfig(
          ['--etcd-endpoints', 'https://10.0.0.1:2379,http://10.0.0.2:2379', ...NODE, ...CA],
          SECRET,
        ),
      ),
    ).toEqual([
      "--etcd-endpoints ('https://10.0.0.1:2379,http://10.0.0.2:2379'): etcd endpoints mix http:// and " +
        'https://: give every endpoint the same scheme, e.g. --etcd-endpoints http://127.0.0.1:2379',
    ]);
  });

  it('asks for a CA when etcd is at a host no public CA signs a certificate for', () => {
    expect(
      errorsOf(
        loadConfig(['--etcd-endpoints', 'https://127.0.0.1:2379,https://10.0.0.2:2379', ...NODE], SECRET),
      ),
    ).toEqual([
      "--etcd-endpoints ('https://127.0.0.1:2379,https://10.0.0.2:2379') names 127.0.0.1, 10.0.0.2, for " +
        "which no public CA signs a certificate: give --etcd-tls-ca the CA that signed etcd's server " +
        "certificate (etcd's --trusted-ca-file is usually the same)",
    ]);
    // A public name may well have a certificate from a public CA: Node's built-in CAs then do.
    expect(
      configOf(loadConfig(['--etcd-endpoints', 'https://etcd.example.com:2379', ...NODE], SECRET)).etcdTlsCa,
    ).toBe('');
  });

  it('tells private hosts from public ones', () => {
    for (const host of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.0.1',
      '100.64.0.1',
      '[::1]',
      'fd12:3456::1',
      'fe80::1',
      'localhost',
      'etcd',
      'etcd-0.etcd.default.svc',
      'etcd.cluster.local',
      'etcd.corp.internal',
    ]) {
      expect([host, isPrivateHost(host)]).toEqual([host, true]);
    }
    for (const host of ['8.8.8.8', '172.32.0.1', '192.169.0.1', '2001:db8::1', 'etcd.example.com']) {
      expect([host, isPrivateHost(host)]).toEqual([host, false]);
    }
  });

  it('refuses every etcd security setting without etcd endpoints', () => {
    expect(
      errorsOf(loadConfig([...CA, '--etcd-username', 'cohort', '--etcd-password-file', 'p'], {})),
    ).toEqual([
      "--etcd-tls-ca ('/etc/cohort/etcd-ca.pem'), --etcd-username ('cohort'), --etcd-password-file ('p') are " +
        'for the etcd client, and there is no etcd: give --etcd-endpoints too, or leave them out',
    ]);
  });

  it('accepts etcd locked down: https, its CA, a client certificate and a user', () => {
    const config = configOf(
      loadConfig(
        [
          '--etcd-endpoints',
          'https://10.0.0.1:2379,https://10.0.0.2:2379,https://10.0.0.3:2379',
          ...NODE,
          ...CA,
          '--etcd-tls-cert',
          'c.pem',
          '--etcd-tls-key',
          'k.pem',
          '--etcd-username',
          'cohort',
        ],
        { ...SECRET, COHORT_ETCD_PASSWORD: PASSWORD },
      ),
    );
    expect(config.etcdEndpoints).toHaveLength(3);
    expect(Object.isFrozen(config)).toBe(true);
  });
});

import type { LoadConfigResult } from '../../../src/config';
import { createConfig, InvalidConfigError, loadConfig } from '../../../src/config';

function errorsOf(result: LoadConfigResult): readonly string[] {
  if (!('errors' in result)) throw new Error(`expected errors, got ${JSON.stringify(result)}`);
  return result.errors;
}

function isValid(result: LoadConfigResult): boolean {
  return 'config' in result;
}

const TOKEN = 'correct-horse-battery-staple';

describe('security settings', () => {
  it('refuses a listen address other machines can reach without TLS, a token or --insecure, saying how to fix it', () => {
    const errors = errorsOf(loadConfig(['--listen', '0.0.0.0:7070'], {}));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain("--listen ('0.0.0.0:7070') can be reached from other machines");
    for (const remedy of [
      '--tls-cert/--tls-key',
      '--token-file',
      'COHORT_TOKEN',
      'unix:PATH',
      '--insecure',
    ]) {
      expect(errors[0]).toContain(remedy);
    }
  });

  it.each([
    ['--insecure', ['--insecure'], {}],
    ['a token file', ['--token-file', '/run/secrets/token'], {}],
    ['COHORT_TOKEN', [], { COHORT_TOKEN: TOKEN }],
    ['TLS', ['--tls-cert', 'c.pem', '--tls-key', 'k.pem'], {}],
  ])('accepts a reachable listen address with %s', (_name, flags, env) => {
    expect(isValid(loadConfig(['--listen', '10.1.2.3:7070', ...flags], env))).toBe(true);
  });

  it.each(['127.0.0.1:7070', '127.8.9.10:0', 'localhost:1', 'LOCALHOST:1', '[::1]:7070', 'unix:/run/c.sock'])(
    'needs nothing to protect the loopback or Unix socket address %s',
    (listen) => {
      expect(isValid(loadConfig(['--listen', listen], {}))).toBe(true);
    },
  );

  it.each([
    ['a token', [], { COHORT_TOKEN: TOKEN }],
    ['TLS', ['--tls-cert', 'c.pem', '--tls-key', 'k.pem'], {}],
  ])(
    'refuses --manual-clock on a reachable listen address, even with %s, saying how to fix it',
    (_name, flags, env) => {
      const errors = errorsOf(loadConfig(['--listen', '0.0.0.0:7070', '--manual-clock', ...flags], env));
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain(
        '--manual-clock (true) lets any client that reaches the server advance its clock',
      );
      expect(errors[0]).toContain("--listen ('0.0.0.0:7070') can be reached from other machines");
      for (const remedy of [
        '127.0.0.1',
        '[::1]',
        'localhost',
        'unix:PATH',
        'drop --manual-clock',
        '--insecure',
      ]) {
        expect(errors[0]).toContain(remedy);
      }
      expect(() => createConfig({ listen: '[::]:0', manualClock: true, token: TOKEN })).toThrow(
        InvalidConfigError,
      );
    },
  );

  it.each(['127.0.0.1:0', '127.1.2.3:7070', 'localhost:0', '[::1]:0', 'unix:/run/c.sock'])(
    'accepts --manual-clock on the loopback or Unix socket address %s',
    (listen) => {
      expect(isValid(loadConfig(['--listen', listen, '--manual-clock'], {}))).toBe(true);
    },
  );

  it('refuses --manual-clock=running on a reachable listen address as it refuses the frozen clock', () => {
    const errors = errorsOf(loadConfig(['--listen', '0.0.0.0:7070', '--manual-clock=running'], {}));
    expect(errors.join('\n')).toContain('lets any client that reaches the server advance its clock');
    expect(isValid(loadConfig(['--listen', '127.0.0.1:0', '--manual-clock=running'], {}))).toBe(true);
    expect(
      isValid(loadConfig(['--listen', '0.0.0.0:7070', '--manual-clock=running', '--insecure'], {})),
    ).toBe(true);
  });

  it('accepts --manual-clock on a reachable address with --insecure, which accepts the risk', () => {
    expect(isValid(loadConfig(['--listen', '0.0.0.0:7070', '--manual-clock', '--insecure'], {}))).toBe(true);
    expect(
      isValid(
        loadConfig(['--listen', '0.0.0.0:7070'], { COHORT_MANUAL_CLOCK: 'true', COHORT_INSECURE: 'true' }),
      ),
    ).toBe(true);
  });

  it('refuses a certificate without its key and a key without its certificate', () => {
    expect(errorsOf(loadConfig(['--tls-cert', 'c.pem'], {}))).toEqual([
      "--tls-cert ('c.pem') needs its twin: give --tls-cert and --tls-key together",
    ]);
    expect(errorsOf(loadConfig([], { COHORT_TLS_KEY: 'k.pem' }))).toEqual([
      "COHORT_TLS_KEY ('k.pem') needs its twin: give --tls-cert and --tls-key together",
    ]);
  });

  it('refuses a client CA (mutual TLS) without the server certificate and key', () => {
    expect(errorsOf(loadConfig(['--tls-client-ca', 'ca.pem'], {}))).toEqual([
      "--tls-client-ca ('ca.pem') (mutual TLS) needs --tls-cert and --tls-key",
    ]);
  });

  it('refuses a token given both in the environment and as a file', () => {
    expect(errorsOf(loadConfig(['--token-file', 't'], { COHORT_TOKEN: TOKEN }))).toEqual([
      "give the token once: COHORT_TOKEN or --token-file ('t'), not both",
    ]);
  });

  it('refuses --token on the command line, pointing at COHORT_TOKEN and --token-file', () => {
    const errors = errorsOf(loadConfig(['--token', TOKEN], {}));
    expect(errors).toEqual([
      '--token is not accepted on the command line, which every user of the machine can read; set ' +
        'COHORT_TOKEN in the environment or give --token-file',
    ]);
    expect(errors.join('\n')).not.toContain(TOKEN);
  });

  it('refuses a cluster secret given both in the environment and as a file', () => {
    expect(errorsOf(loadConfig(['--cluster-secret-file', 's'], { COHORT_CLUSTER_SECRET: TOKEN }))).toEqual([
      "give the cluster secret once: COHORT_CLUSTER_SECRET or --cluster-secret-file ('s'), not both",
    ]);
  });

  it('refuses --cluster-secret on the command line, pointing at its variable and its file', () => {
    const errors = errorsOf(loadConfig(['--cluster-secret', TOKEN], {}));
    expect(errors).toEqual([
      '--cluster-secret is not accepted on the command line, which every user of the machine can read; set ' +
        'COHORT_CLUSTER_SECRET in the environment or give --cluster-secret-file',
    ]);
    expect(errors.join('\n')).not.toContain(TOKEN);
  });

  it('refuses a short cluster secret without ever showing it', () => {
    expect(errorsOf(loadConfig([], { COHORT_CLUSTER_SECRET: 'hunter2' }))).toEqual([
      'COHORT_CLUSTER_SECRET must be at least 16 characters long, got 7',
    ]);
  });

  it('refuses a short token or one with spaces without ever showing it', () => {
    const short = errorsOf(loadConfig([], { COHORT_TOKEN: 'hunter2' }));
    expect(short).toEqual(['COHORT_TOKEN must be at least 16 characters long, got 7']);
    const spaced = errorsOf(loadConfig([], { COHORT_TOKEN: 'a token with some spaces' }));
    expect(spaced).toEqual([
      'COHORT_TOKEN must be printable ASCII without spaces: it travels in an HTTP header',
    ]);
    let thrown: unknown;
    try {
      createConfig({ token: 'hunter2', listen: '0.0.0.0:1', tokenFile: 'f' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidConfigError);
    expect((thrown as Error).message).not.toContain('hunter2');
    expect((thrown as InvalidConfigError).problems).toContain(
      "give the token once: token or tokenFile ('f'), not both",
    );
  });

  it('turns the admin listener off with off or an empty flag, and refuses other words', () => {
    expect(isValid(loadConfig(['--admin-listen', 'off'], {}))).toBe(true);
    expect(isValid(loadConfig(['--admin-listen='], {}))).toBe(true);
    expect(isValid(loadConfig(['--admin-listen', '[::1]:0'], {}))).toBe(true);
    expect(errorsOf(loadConfig(['--admin-listen', 'no'], {}))).toEqual([
      "--admin-listen ('no') must be HOST:PORT with a port from 0 to 65535, or off, e.g. --admin-listen 127.0.0.1:7071",
    ]);
  });

  it('refuses an admin address equal to the gRPC address, but lets both ask for a free port', () => {
    expect(
      errorsOf(loadConfig(['--listen', '127.0.0.1:7000', '--admin-listen', '127.0.0.1:7000'], {})),
    ).toEqual(["--admin-listen ('127.0.0.1:7000') must differ from --listen ('127.0.0.1:7000')"]);
    expect(isValid(loadConfig(['--listen', '127.0.0.1:0', '--admin-listen', '127.0.0.1:0'], {}))).toBe(true);
  });

  it('keeps the admin listener off in programmatic configurations unless asked for', () => {
    expect(createConfig().adminListen).toBe('off');
    expect(createConfig({ adminListen: '127.0.0.1:0' }).adminListen).toBe('127.0.0.1:0');
    expect(
      isValid(loadConfig([], {})) &&
        (loadConfig([], {}) as { config: { adminListen: string } }).config.adminListen,
    ).toBe('127.0.0.1:7071');
  });

  it('turns the Kafka listener off with off, and refuses one other machines reach unless insecure', () => {
    expect(isValid(loadConfig(['--kafka-listen', 'off'], {}))).toBe(true);
    expect(isValid(loadConfig(['--kafka-listen', '[::1]:0'], {}))).toBe(true);
    expect(errorsOf(loadConfig(['--kafka-listen', 'no'], {}))).toEqual([
      "--kafka-listen ('no') must be HOST:PORT with a port from 0 to 65535, or off, e.g. --kafka-listen 127.0.0.1:9092",
    ]);
    expect(errorsOf(loadConfig(['--kafka-listen', '10.0.0.1:9092', '--token-file', 't'], {}))).toEqual([
      "--kafka-listen ('10.0.0.1:9092') can be reached from other machines, and the Kafka listener has no TLS " +
        'and no authentication: listen on loopback (127.0.0.1, [::1], localhost), turn it off with ' +
        '--kafka-listen off, or accept the risk with --insecure',
    ]);
    expect(isValid(loadConfig(['--kafka-listen', '10.0.0.1:9092', '--insecure'], {}))).toBe(true);
  });

  it('needs a Kafka advertised address when the Kafka listener binds every interface', () => {
    expect(errorsOf(loadConfig(['--kafka-listen', '0.0.0.0:9092', '--insecure'], {}))).toEqual([
      "--kafka-advertised-address is required when --kafka-listen ('0.0.0.0:9092') names no host a client " +
        'can connect to: give it HOST:PORT, e.g. --kafka-advertised-address broker-1.internal:9092',
    ]);
    expect(
      isValid(
        loadConfig(
          ['--kafka-listen', '0.0.0.0:9092', '--insecure', '--kafka-advertised-address', '10.0.0.1:9092'],
          {},
        ),
      ),
    ).toBe(true);
  });

  it('refuses a Kafka address equal to the gRPC or admin address', () => {
    expect(errorsOf(loadConfig(['--listen', '127.0.0.1:9092'], {}))).toEqual([
      "--kafka-listen (default '127.0.0.1:9092') must differ from --listen ('127.0.0.1:9092')",
    ]);
    expect(createConfig().kafkaListen).toBe('127.0.0.1:0');
  });

  it('bounds the message size limit below by 1 KiB', () => {
    expect(errorsOf(loadConfig(['--max-message-bytes', '1023'], {}))).toEqual([
      '--max-message-bytes (1023) must be >= 1024',
    ]);
  });
});

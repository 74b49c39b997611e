import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseCommandLine } from '../../../src/cli/command-line';
import { connectionOf, CONNECTION_OPTIONS, DEFAULT_ADDRESS } from '../../../src/cli/connection-options';
import { COMMANDS, runCli } from '../../../src/cli/run-cli';
import { captureContext } from './cli-harness';

/**
 * What the CLI decides before it contacts any server: dispatch, help, usage errors and connection flags.
 * Commands against a live server are tested by spawning the CLI (test/integration/cli.test.ts).
 */
describe('cohort (the command line)', () => {
  it('lists every command and the exit statuses on --help', async () => {
    const { context, out } = captureContext();
    expect(await runCli(['--help'], context)).toBe(0);
    for (const command of COMMANDS) expect(out()).toContain(`  ${command.name}`);
    expect(out()).toContain(
      'exit status: 0 done, 1 the operation failed, 2 usage error, 3 not found, 4 server unavailable',
    );
  });

  it('exits 2 with the help for no command or an unknown one', async () => {
    const none = captureContext();
    expect(await runCli([], none.context)).toBe(2);
    expect(none.err()).toContain('usage: cohort <command>');
    const unknown = captureContext();
    expect(await runCli(['grups'], unknown.context)).toBe(2);
    expect(unknown.err()).toMatch(/^cohort: unknown command 'grups'/);
  });

  it('lists a group’s subcommands on --help, and refuses an unknown one', async () => {
    const help = captureContext();
    expect(await runCli(['groups', '--help'], help.context)).toBe(0);
    expect(help.out()).toMatch(/list .*\n.*describe .*\n.*delete/);
    const bad = captureContext();
    expect(await runCli(['topics', 'drop', 'x'], bad.context)).toBe(2);
    expect(bad.err()).toContain("unknown command 'topics drop'");
  });

  it.each([
    [['groups', 'describe', '--help'], 'usage: cohort groups describe GROUP...'],
    [['topics', 'create', '--help'], '--partitions N'],
    [['produce', '--help'], '--key-separator SEP'],
    [['consume', '--help'], '--from-beginning'],
  ])('prints the options of %j', async (args, expected) => {
    const { context, out } = captureContext();
    expect(await runCli(args, context)).toBe(0);
    expect(out()).toContain(expected);
    expect(out()).toContain('--address HOST:PORT');
  });

  it.each([
    [['groups', 'describe'], 'missing argument'],
    [['topics', 'create', 'orders', '--partitions', 'many'], '--partitions must be a whole number'],
    [['consume', 'orders', '--max-messages', '0'], '--max-messages must be a whole number'],
    [['groups', 'list', '--adress', 'x'], "'--adress'"],
    [['topics', 'list', '--tls-ca', '/no/such/file'], '--tls-ca /no/such/file: ENOENT'],
    [['topics', 'list', '--tls-cert', __filename], '--tls-cert and --tls-key go together'],
    [['topics', 'list', '--request-timeout-ms', 'soon'], '--request-timeout-ms must be a whole number'],
    [['produce', 'orders', '--acks', '2'], '--acks must be a whole number between -1 and 1'],
    [['produce', 'orders', '--acks', '-2'], '--acks must be a whole number between -1 and 1'],
    [
      ['topics', 'list', '--address', 'notanaddress'],
      "--address must be HOST:PORT (e.g. 127.0.0.1:7070, [::1]:7070) or unix:/path, got 'notanaddress'",
    ],
    [['topics', 'list', '--address', 'host:port'], "got 'host:port'"],
    [['topics', 'list', '--address', '127.0.0.1:70000'], "got '127.0.0.1:70000'"],
    [['topics', 'list', '--address', 'unix:'], "got 'unix:'"],
    [
      ['topics', 'list', '--timeout-ms', '0'],
      "--timeout-ms must be a whole number of milliseconds above 0, got '0'",
    ],
    [
      ['groups', 'list', '--state', 'Bogus'],
      "--state must be one of Empty, PreparingRebalance, CompletingRebalance, Stable, Dead, got 'Bogus'",
    ],
  ])('exits 2 for %j, naming the problem, before contacting any server', async (args, message) => {
    const { context, err } = captureContext();
    expect(await runCli(args, context)).toBe(2);
    expect(err()).toContain(message);
    expect(err()).toContain('usage: cohort');
  });

  describe('connection flags', () => {
    const spec = {
      usage: 'cohort x',
      description: '',
      options: CONNECTION_OPTIONS,
      positionals: { min: 0, max: 0 },
    };
    const connection = (args: string[], env: Record<string, string> = {}) =>
      connectionOf(parseCommandLine(spec, args)!, spec, env);

    it('connects to 127.0.0.1:7070 in plaintext without a token by default', () => {
      expect(DEFAULT_ADDRESS).toBe('127.0.0.1:7070');
      expect(connection([])).toEqual({
        options: { address: '127.0.0.1:7070' },
        requestTimeoutMs: 10_000,
        connectTimeoutMs: 2_000,
        isJson: false,
      });
    });

    it('takes HOST:PORT, [IPV6]:PORT and unix:PATH addresses, and --timeout-ms', () => {
      for (const address of ['leader:7070', '10.0.0.7:1', '[::1]:7070', 'unix:/run/cohort.sock']) {
        expect(connection(['--address', address]).options.address).toBe(address);
      }
      expect(connection(['--timeout-ms', '500']).connectTimeoutMs).toBe(500);
    });

    it('takes a comma-separated bootstrap list in --address and $COHORT_ADDRESS, checking each entry', () => {
      expect(connection(['--address', 'n1:7070,n2:7070, n3:7070']).options).toEqual({
        bootstrap: ['n1:7070', 'n2:7070', 'n3:7070'],
      });
      expect(connection([], { COHORT_ADDRESS: '10.0.0.1:7070,10.0.0.2:7070' }).options).toEqual({
        bootstrap: ['10.0.0.1:7070', '10.0.0.2:7070'],
      });
      expect(() => connection(['--address', 'n1:7070,nope'])).toThrow(/^--address must be HOST:PORT.*'nope'/);
      expect(() => connection(['--address', 'n1:7070,'])).toThrow(/^--address must be HOST:PORT/);
    });

    it('takes the address from --address, else $COHORT_ADDRESS, and names the one that is wrong', () => {
      const env = { COHORT_ADDRESS: '10.0.0.7:7070' };
      expect(connection(['--address', 'leader:7070'], env).options.address).toBe('leader:7070');
      expect(connection([], env).options.address).toBe('10.0.0.7:7070');
      expect(connection([], { COHORT_ADDRESS: '' }).options.address).toBe(DEFAULT_ADDRESS);
      expect(() => connection([], { COHORT_ADDRESS: 'notanaddress' })).toThrow(
        /^COHORT_ADDRESS must be HOST:PORT/,
      );
      expect(() => connection(['--address', 'nope'], env)).toThrow(/^--address must be HOST:PORT/);
    });

    it('takes the token from --token, else --token-file, else $COHORT_TOKEN', () => {
      const dir = mkdtempSync(join(tmpdir(), 'cohort-cli-'));
      try {
        const file = join(dir, 'token');
        writeFileSync(file, 'from-the-file-0123456789\n');
        const env = { COHORT_TOKEN: 'from-the-environment' };
        expect(connection(['--token', 'from-the-flag'], env).options.token).toBe('from-the-flag');
        expect(connection(['--token-file', file], env).options.token).toBe('from-the-file-0123456789');
        expect(connection([], env).options.token).toBe('from-the-environment');
        expect(connection([], { COHORT_TOKEN: '' }).options.token).toBeUndefined();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('turns on TLS with --tls (system roots) or with PEM files', () => {
      expect(connection(['--tls']).options.tls).toBe(true);
      const tls = connection(['--tls-ca', __filename, '--tls-cert', __filename, '--tls-key', __filename])
        .options.tls;
      expect(tls).toMatchObject({
        ca: expect.any(Buffer),
        cert: expect.any(Buffer),
        key: expect.any(Buffer),
      });
    });
  });
});

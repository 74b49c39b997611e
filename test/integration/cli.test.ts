import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CohortClient, RANGE_ASSIGNOR } from '../../src';
import {
  runCli as runCliWith,
  startCli as startCliWith,
  transpileSources,
  type CliOptions,
  type RunningCli,
  type TranspiledSources,
} from '../support/run-cli';
import { startTestServer, type TestServer } from '../support/start-test-server';
import { makeTlsFixtures } from '../support/tls-fixtures';

/**
 * The `cohort` CLI as a user runs it: a process per command against a live server on 127.0.0.1, judged by
 * its stdout, stderr and exit status. The commands run from a transpiled copy of src/ (what the package's
 * bin runs once built), which starts in a fraction of the time it takes to transpile src/ on the fly; one
 * test runs it through scripts/register-typescript.js, as `npm run cli` does. Independent commands run side by side to keep the suite quick.
 */

jest.setTimeout(60_000);

let build: TranspiledSources;
beforeAll(() => {
  build = transpileSources();
});
afterAll(() => build.remove());

const runCli = (args: readonly string[], options: CliOptions = {}) =>
  runCliWith(args, { script: build.cliMain, ...options });
const startCli = (args: readonly string[], options: CliOptions = {}) =>
  startCliWith(args, { script: build.cliMain, ...options });

let t: TestServer;
let address: string[];
const clients: CohortClient[] = [];
const running: RunningCli[] = [];

beforeEach(async () => {
  t = await startTestServer({ groupInitialRebalanceDelayMs: 0 });
  address = ['--address', t.target];
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.kill()));
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await t.close();
});

function sdk(clientId: string): CohortClient {
  const client = new CohortClient({ address: t.target, clientId });
  clients.push(client);
  return client;
}

describe('cohort topics', () => {
  it('creates, lists and describes topics; a second create fails with 1 unless --if-not-exists', async () => {
    const created = await runCli(['topics', 'create', 'orders', '--partitions', '3', ...address]);
    expect(created).toMatchObject({ code: 0, stdout: 'Created topic orders.\n' });
    const [again, tolerated, listed, described, missing] = await Promise.all([
      runCli(['topics', 'create', 'orders', ...address]),
      runCli(['topics', 'create', 'orders', '--if-not-exists', ...address]),
      runCli(['topics', 'list', ...address]),
      runCli(['topics', 'describe', 'orders', '--json', ...address]),
      runCli(['topics', 'describe', 'nowhere', ...address]),
    ]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/TOPIC_ALREADY_EXISTS/);
    expect(tolerated).toMatchObject({ code: 0, stdout: 'Topic orders already exists.\n' });
    expect(listed).toMatchObject({ code: 0, stdout: 'orders\n' });
    expect(described.code).toBe(0);
    expect(JSON.parse(described.stdout)).toEqual([
      {
        topic: 'orders',
        error: null,
        partitions: [0, 1, 2].map((partition) => ({
          partition,
          leader: 0,
          replicas: [0],
          isr: [0],
          logStartOffset: 0,
          highWatermark: 0,
        })),
      },
    ]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain("topic 'nowhere' does not exist");
  });
});

describe('cohort produce and consume', () => {
  it('sends stdin lines with keys, and prints them back from the beginning until --max-messages', async () => {
    await sdk('setup')
      .admin()
      .createTopics([{ name: 'greetings', numPartitions: 1 }]);
    const produced = await runCli(['produce', 'greetings', '--key-separator', ':', '--json', ...address], {
      stdin: 'alice:hello\nbob:hi there\ncarol:hey\ndave:yo\n',
    });
    expect(produced.code).toBe(0);
    expect(
      produced.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual([0, 1, 2, 3].map((offset) => ({ topic: 'greetings', partition: 0, offset })));

    const consumed = await runCli([
      'consume',
      'greetings',
      '--from-beginning',
      '--max-messages',
      '3',
      '--print-key',
      '--key-separator',
      '=',
      ...address,
    ]);
    expect(consumed).toMatchObject({ code: 0, stdout: 'alice=hello\nbob=hi there\ncarol=hey\n' });
    expect(consumed.stderr).toBe('Processed a total of 3 messages\n');
    // Without --group it used a group of its own, and deleted it.
    expect(await sdk('check').admin().listGroups()).toEqual([]);
  });

  it('refuses a line without the key separator (1) and an unknown topic (3)', async () => {
    await sdk('setup')
      .admin()
      .createTopics([{ name: 'strict', numPartitions: 1 }]);
    const [badLine, unknown] = await Promise.all([
      runCli(['produce', 'strict', '--key-separator', ':', ...address], {
        stdin: 'k:v\nno separator\nk:w\n',
      }),
      runCli(['consume', 'nowhere', ...address]),
    ]);
    expect(badLine.code).toBe(1);
    expect(badLine.stderr).toContain("line 2 has no key separator ':'");
    expect(badLine.stdout).toBe('Produced 1 record to strict.\n');
    expect(unknown.code).toBe(3);
  });

  it('consume stops cleanly on SIGTERM, leaving its group', async () => {
    await sdk('setup')
      .admin()
      .createTopics([{ name: 'stream', numPartitions: 1 }]);
    const consumer = startCli(['consume', 'stream', '--group', 'watchers', ...address]);
    running.push(consumer);
    const admin = sdk('check').admin();
    for (;;) {
      const [group] = await admin.describeGroups(['watchers']);
      if (group.state === 'Stable') break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // Stable does not mean the consumer has its position yet: it starts at the latest offset, looked up
    // after its assignment, so a single record sent now can land before that offset and never be seen
    // (a clean-clone CI run on a loaded machine waited out the 60 s timeout here once). Send numbered
    // records until it prints one.
    const producer = sdk('producer').producer({ lingerMs: 0 });
    const printed = consumer.waitFor(/live record \d+\n/);
    let seen = false;
    // A consumer that exits first rejects `printed`, which the race below reports.
    void printed.then(
      () => (seen = true),
      () => undefined,
    );
    for (let n = 0; !seen; n++) {
      await producer.send({ topic: 'stream', value: `live record ${n}` });
      await Promise.race([printed, new Promise((resolve) => setTimeout(resolve, 100))]);
    }
    consumer.child.kill('SIGTERM');
    const result = await consumer.exited;
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^(live record \d+\n)+$/);
    const [group] = await admin.describeGroups(['watchers']);
    expect(group.state).toBe('Empty');
  });
});

/** Waits for `text`, then stops the command with Ctrl-C (SIGINT) and returns how it ended. */
async function waitAndStop(
  command: RunningCli,
  text: string,
): Promise<{ code: number | null; stdout: string }> {
  await command.waitFor(text);
  command.child.kill('SIGINT');
  return command.exited;
}

/** Resolves once `check` holds, polling; the test's timeout bounds it. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('cohort groups', () => {
  it('watch prints each change as it happens, from a snapshot; Ctrl-C exits 0, --json gives one document a line', async () => {
    const watch = startCli(['groups', 'watch', 'lookouts', ...address]);
    running.push(watch);
    await watch.waitFor(/ lookouts {2}snapshot {2}does not exist\n/);
    const json = startCli(['groups', 'watch', 'lookouts', '--json', ...address]);
    running.push(json);
    await json.waitFor('"reason":"snapshot"');
    const member = sdk('lookout').join({ groupId: 'lookouts', topics: [] });
    await watch.waitFor(/ lookouts {2}rebalance-completed {2}Stable {2}generation 1 {2}1 member: lookout-/);
    await json.waitFor('"reason":"rebalance-completed"');
    await member.close();
    await watch.waitFor(/ lookouts {2}group-emptied {2}Empty {2}generation 2 {2}0 members\n/);
    watch.child.kill('SIGINT');
    const result = await watch.exited;
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines.map((line) => line.split('  ')[2])).toEqual([
      'snapshot',
      'group-created',
      'member-joined',
      'join-completed',
      'rebalance-completed',
      'member-left',
      'group-emptied',
    ]);
    for (const line of lines) expect(line).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z {2}lookouts {2}/);
    const documents = (await waitAndStop(json, '"reason":"group-emptied"')).stdout.trimEnd().split('\n');
    const emptied = JSON.parse(documents.at(-1)!) as Record<string, unknown>;
    expect(emptied).toMatchObject({
      reason: 'group-emptied',
      isSnapshot: false,
      groupId: 'lookouts',
      state: 'Empty',
      generationId: 2,
      members: [],
      error: null,
    });
    expect(typeof emptied.timestampMs).toBe('number');
  });

  it('watch exits 4 with a message when the server goes away', async () => {
    const watch = startCli(['groups', 'watch', ...address]);
    running.push(watch);
    await until(() => t.server.groupWatches.size === 1);
    await t.server.close();
    const result = await watch.exited;
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/^cohort: .*WatchGroups.*ended by the server/);
  });

  it('consume --print-group-events shows joins and rebalances; describe --client-id finds one member', async () => {
    await sdk('setup')
      .admin()
      .createTopics([{ name: 'watched', numPartitions: 2 }]);
    const consume = (clientId: string) => [
      'consume',
      'watched',
      '--group',
      'pair',
      '--client-id',
      clientId,
      '--print-group-events',
      ...address,
    ];
    const alpha = startCli(consume('alpha'));
    running.push(alpha);
    await until(() => alpha.stderr().includes('cohort: alpha in pair: joined generation'));
    expect(alpha.stderr()).toMatch(/joined generation \d+ as leader: owns watched \[0, 1\]\n/);

    const [found, missing] = await Promise.all([
      runCli(['groups', 'describe', 'pair', '--client-id', 'alpha', ...address]),
      runCli(['groups', 'describe', 'pair', '--client-id', 'beta', ...address]),
    ]);
    expect(found.code).toBe(0);
    expect(found.stdout).toMatch(/\balpha\b/);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain("group 'pair' has no member with client id 'beta'");

    const beta = startCli(consume('beta'));
    running.push(beta);
    await until(() => beta.stderr().includes('cohort: beta in pair: joined generation'));
    // Cooperatively (the default assignor), beta first joins owning nothing, then gets what alpha gave up.
    await until(() => /beta in pair: .*owns watched \[\d\]\n/.test(beta.stderr()));
    await until(() =>
      /alpha in pair: assigned in generation \d+.*owns watched \[\d\]\n/.test(alpha.stderr()),
    );
    // alpha gave a partition up for beta; each now owns one.
    expect(alpha.stderr()).toMatch(/alpha in pair: gives up watched \[[^\]]+\] \((rebalance|reassigned)\)/);
    expect(alpha.stderr()).toMatch(/assigned in generation \d+( as leader)?: owns watched \[\d\]\n/);
    const both = await runCli(['groups', 'describe', 'pair', '--client-id', 'beta', ...address]);
    expect(both.code).toBe(0);
  });

  it('consume --assignor joins a group whose members offer another assignor than the default', async () => {
    await sdk('setup')
      .admin()
      .createTopics([{ name: 'shared', numPartitions: 2 }]);
    await sdk('producer').producer({ lingerMs: 0 }).send({ topic: 'shared', partition: 1, value: 'hello' });
    // A member that offers range only, as the Python example does.
    const member = sdk('python-like').consumer({
      groupId: 'mixed',
      topics: ['shared'],
      protocols: [RANGE_ASSIGNOR],
    });
    void member.run({ eachMessage: () => undefined });
    while (member.assignment().length < 2) await new Promise((resolve) => setTimeout(resolve, 20));
    const [ranged, unknown] = await Promise.all([
      runCli([
        'consume',
        'shared',
        '--group',
        'mixed',
        '--assignor',
        'range',
        '--from-beginning',
        '--idle-timeout-ms',
        '3000',
        '--print-group-events',
        ...address,
      ]),
      runCli(['consume', 'shared', '--assignor', 'sticky-ish', ...address]),
    ]);
    expect(ranged.code).toBe(0);
    // It joined (a member offering cooperative-sticky alone is refused INCONSISTENT_GROUP_PROTOCOL).
    expect(ranged.stderr).toMatch(/joined generation \d+: owns shared/);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(
      '--assignor sticky-ish: use one of cooperative-sticky, range, roundrobin',
    );
  });

  it('describe shows the committed offset, the high watermark and the lag of each partition, and the live members', async () => {
    const admin = sdk('setup').admin();
    await admin.createTopics([{ name: 'ledger', numPartitions: 2 }]);
    const producer = sdk('producer').producer({ lingerMs: 0 });
    for (let i = 0; i < 5; i++) await producer.send({ topic: 'ledger', partition: 0, value: `entry ${i}` });
    await producer.send({ topic: 'ledger', partition: 1, value: 'other' });
    // A consumer in group "auditors" prints 4 of the 6 records, commits them and leaves.
    const consumed = await runCli([
      'consume',
      'ledger',
      '--group',
      'auditors',
      '--from-beginning',
      '--max-messages',
      '4',
      ...address,
    ]);
    expect(consumed.code).toBe(0);

    // A live group: an application's consumer holds both partitions.
    const live = sdk('billing-app').consumer({
      groupId: 'billing',
      topics: ['ledger'],
      autoOffsetReset: 'earliest',
    });
    void live.run({ eachMessage: () => undefined });
    while (live.assignment().length < 2) await new Promise((resolve) => setTimeout(resolve, 20));

    const [json, table, list] = await Promise.all([
      runCli(['groups', 'describe', 'auditors', '--json', ...address]),
      runCli(['groups', 'describe', 'auditors', 'billing', ...address]),
      runCli(['groups', 'list', '--json', ...address]),
    ]);
    expect(json.code).toBe(0);
    const [auditors] = JSON.parse(json.stdout) as {
      state: string;
      generationId: number;
      members: unknown[];
      partitions: {
        topic: string;
        partition: number;
        committedOffset: number;
        highWatermark: number;
        lag: number;
      }[];
    }[];
    expect(auditors.state).toBe('Empty');
    expect(auditors.generationId).toBeGreaterThanOrEqual(1); // consume joined it, then left
    expect(auditors.members).toEqual([]);
    const lagOf = new Map(
      auditors.partitions.map((p) => [p.partition, [p.committedOffset, p.highWatermark, p.lag]]),
    );
    // Four records were printed, whatever their partitions: together the commits cover exactly four.
    const committed = [...lagOf.values()].reduce((sum, [c]) => sum + c, 0);
    expect(committed).toBe(4);
    expect([...lagOf.values()].reduce((sum, [, , lag]) => sum + lag, 0)).toBe(2);
    for (const [c, hw, lag] of lagOf.values()) expect(lag).toBe(hw - c);

    expect(table.code).toBe(0);
    expect(table.stdout).toContain("Consumer group 'auditors' has no active members.");
    expect(table.stdout).toMatch(
      /GROUP +TOPIC +PARTITION +CURRENT-OFFSET +LOG-END-OFFSET +LAG +CONSUMER-ID +HOST +CLIENT-ID/,
    );
    const memberId = live.member?.memberId as string;
    expect(table.stdout).toMatch(/GROUP +STATE +GENERATION +PROTOCOL-TYPE +ASSIGNMENT-STRATEGY +#MEMBERS/);
    // The coordinator as FindCoordinator named it: the one node, reached at the address given.
    const coordinator = `${t.target.replace(/[.[\]]/g, '\\$&')} \\(0\\)`;
    expect(table.stdout).toMatch(
      new RegExp(
        `billing +Stable +${live.member?.generationId} +consumer +cooperative-sticky +1 +${coordinator}\\n`,
      ),
    );
    expect(table.stdout).toMatch(
      new RegExp(`billing +${memberId} +- +127\\.0\\.0\\.1 +billing-app +2 +ledger\\(0,1\\)`),
    );
    expect(table.stdout).toMatch(
      new RegExp(`billing +ledger +0 +\\S+ +5 +\\S+ +${memberId} +127\\.0\\.0\\.1 +billing-app`),
    );

    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([
      { groupId: 'auditors', protocolType: 'consumer', state: 'Empty' },
      { groupId: 'billing', protocolType: 'consumer', state: 'Stable' },
    ]);

    const [refused, deleted, gone, described] = await Promise.all([
      runCli(['groups', 'delete', 'billing', ...address]),
      runCli(['groups', 'delete', 'auditors', ...address]),
      runCli(['groups', 'delete', 'nobody', ...address]),
      runCli(['groups', 'describe', 'nobody', ...address]),
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("group 'billing' still has members");
    expect(deleted).toMatchObject({ code: 0, stdout: 'Deleted group auditors.\n' });
    expect(gone.code).toBe(3);
    expect(described.code).toBe(3);
    expect(described.stderr).toContain("consumer group 'nobody' does not exist");
  });
});

describe('cohort cluster', () => {
  it('describe shows the node, the controller and the groups each __consumer_offsets partition holds', async () => {
    const setup = sdk('setup');
    const [created] = await setup.admin().createTopics([{ name: 'ledger', numPartitions: 1 }]);
    expect(created.error).toBeNull();
    await setup.producer({ acks: -1 }).send({ topic: 'ledger', value: 'entry' });
    // Two groups that stay: each commits the record it printed.
    for (const group of ['one', 'two']) {
      const consumed = await runCli([
        'consume',
        'ledger',
        '--group',
        group,
        '--from-beginning',
        '--max-messages',
        '1',
        ...address,
      ]);
      expect(consumed.code).toBe(0);
    }
    const [text, json] = await Promise.all([
      runCli(['cluster', 'describe', ...address]),
      runCli(['cluster', 'describe', '--json', ...address]),
    ]);
    expect(text.code).toBe(0);
    const [host, port] = [
      t.target.slice(0, t.target.lastIndexOf(':')),
      t.target.slice(t.target.lastIndexOf(':') + 1),
    ];
    expect(text.stdout).toMatch(new RegExp(`^NODE +ADDRESS\\n0 +${host.replace(/\./g, '\\.')}:${port}\\n`));
    // A single server is its own controller.
    expect(text.stdout).toContain('CONTROLLER: 0');
    expect(json.code).toBe(0);
    const layout = JSON.parse(json.stdout) as {
      nodes: unknown[];
      controllerId: number | null;
      groups: number;
      offsetsPartitions: { leaderId: number; groups: number }[] | null;
    };
    expect(layout).toMatchObject({
      nodes: [{ nodeId: 0, host, port: Number(port) }],
      controllerId: 0,
      groups: 2,
    });
    // One node leads every partition there is, and the partitions hold every group between them.
    if (layout.offsetsPartitions !== null) {
      expect(layout.offsetsPartitions.every((p) => p.leaderId === 0)).toBe(true);
      expect(layout.offsetsPartitions.reduce((sum, p) => sum + p.groups, 0)).toBe(2);
    } else {
      expect(text.stdout).toContain('__consumer_offsets is not a topic of this cluster (yet)');
    }
  });

  it('takes a comma-separated --address, starting from whichever node answers', async () => {
    const listed = await runCli(['topics', 'list', '--address', `127.0.0.1:1,${t.target}`]);
    expect(listed.code).toBe(0);
  });
});

describe('connecting', () => {
  it('exits 4 within --timeout-ms when nothing listens, long before --request-timeout-ms, saying so', async () => {
    // Were the first operation's retries what ended it, the test would time out long before this returns.
    const result = await runCli([
      'groups',
      'list',
      '--address',
      '127.0.0.1:1',
      '--request-timeout-ms',
      '600000',
      '--timeout-ms',
      '300',
    ]);
    expect(result.code).toBe(4);
    expect(result.stderr).toContain('cannot reach 127.0.0.1:1: connection refused (connect ECONNREFUSED');
    expect(result.stderr).toContain('is the server running, and is --address right?');
  });

  it('exits 2 for an address that is not HOST:PORT, without dialing it', async () => {
    const result = await runCli(['groups', 'list', '--address', 'notanaddress']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--address must be HOST:PORT');
  });

  it('sends the token of --token or $COHORT_TOKEN to a server that requires one, and exits 1 without it', async () => {
    const token = 'cli-test-token-0123456789';
    const secured = await startTestServer({ token });
    try {
      const at = ['--address', secured.target, '--request-timeout-ms', '2000'];
      const [without, wrong, flag, env] = await Promise.all([
        runCli(['groups', 'list', ...at]),
        runCli(['groups', 'list', '--token', 'not-the-token-at-all', ...at]),
        runCli(['groups', 'list', '--token', token, ...at]),
        runCli(['groups', 'list', ...at], { env: { COHORT_TOKEN: token } }),
      ]);
      expect([without.code, wrong.code, flag.code, env.code]).toEqual([1, 1, 0, 0]);
      expect(without.stderr).toContain('check --token');
    } finally {
      await secured.close();
    }
  });
});

describe('cohort over TLS', () => {
  const tls = makeTlsFixtures();
  afterAll(() => tls.cleanup());

  it('talks to a TLS server on 127.0.0.1 without a DEP0123 warning, and names a failed handshake', async () => {
    const secure = await startTestServer({ tlsCert: tls.serverCertPath, tlsKey: tls.serverKeyPath });
    try {
      const at = ['topics', 'list', '--address', secure.target, '--request-timeout-ms', '600000'];
      const [trusted, systemRoots, plaintext] = await Promise.all([
        runCli([...at, '--tls-ca', tls.caCertPath]),
        runCli([...at, '--tls']),
        runCli(at),
      ]);
      expect(trusted).toEqual({ code: 0, stdout: '', stderr: '' });
      expect(systemRoots.code).toBe(4);
      expect(systemRoots.stderr).toContain(
        `cannot reach ${secure.target}: the TLS handshake failed (unable to verify the first certificate)`,
      );
      expect(systemRoots.stderr).toContain('--tls-ca must name the CA that signed its certificate');
      expect(systemRoots.stderr).not.toContain('is the server running');
      expect(plaintext.code).toBe(4);
      expect(plaintext.stderr).toContain('does it want TLS (--tls, --tls-ca)?');
      for (const r of [trusted, systemRoots, plaintext]) expect(r.stderr).not.toContain('DEP0123');
    } finally {
      await secure.close();
    }
  });

  it('names the missing client certificate of mutual TLS', async () => {
    const mutual = await startTestServer({
      tlsCert: tls.serverCertPath,
      tlsKey: tls.serverKeyPath,
      tlsClientCa: tls.caCertPath,
    });
    try {
      const at = ['topics', 'list', '--address', mutual.target, '--tls-ca', tls.caCertPath];
      const [without, withCert] = await Promise.all([
        runCli(at),
        runCli([...at, '--tls-cert', tls.clientCertPath, '--tls-key', tls.clientKeyPath]),
      ]);
      expect(without.code).toBe(4);
      expect(without.stderr).toContain('the TLS handshake failed (');
      expect(without.stderr).toContain('certificate required');
      expect(without.stderr).toContain('needs --tls-cert and --tls-key');
      expect(withCert).toEqual({ code: 0, stdout: '', stderr: '' });
    } finally {
      await mutual.close();
    }
  });
});

describe('cohort from its TypeScript sources, as npm run cli runs it', () => {
  it('lists the topics of the server', async () => {
    await sdk('setup')
      .admin()
      .createTopics([{ name: 'typed', numPartitions: 1 }]);
    const result = await runCliWith(['topics', 'list', ...address]);
    expect(result).toMatchObject({ code: 0, stdout: 'typed\n' });
  });
});

describe('cohort serve', () => {
  it('runs the server as npm start does, serves the CLI, and exits 0 on SIGTERM', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cohort-cli-serve-'));
    try {
      const server = startCli([
        'serve',
        '--listen',
        '127.0.0.1:0',
        '--admin-listen',
        '127.0.0.1:0',
        '--kafka-listen',
        '127.0.0.1:0',
        '--data-dir',
        dataDir,
      ]);
      running.push(server);
      const out = await server.waitFor('"msg":"cohort listening"');
      const port = (/"port":(\d+)/.exec(out) as RegExpExecArray)[1];
      const created = await runCli(['topics', 'create', 'served', '--address', `127.0.0.1:${port}`]);
      expect(created.code).toBe(0);
      server.child.kill('SIGTERM');
      const result = await server.exited;
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('"msg":"cohort stopped"');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('passes --help and configuration errors through with the server’s exit statuses', async () => {
    const [help, bad] = await Promise.all([runCli(['serve', '--help']), runCli(['serve', '--no-such-flag'])]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--listen');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('unknown flag --no-such-flag');
  });
});

import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { TranspiledSources } from '../support/run-cli';
import { transpileSources } from '../support/run-cli';
import type { TestServer } from '../support/start-test-server';
import { startTestServer } from '../support/start-test-server';
import { runNode, type NodeRun } from '../support/run-node';

const REPO_ROOT = join(__dirname, '..', '..');
const EXAMPLES_DIR = join(REPO_ROOT, 'examples');

let sources: TranspiledSources | undefined;

/**
 * Runs examples/<name> as `npm run example -- examples/<name>` does, against the server at `address`, with
 * 'cohort' resolved to a transpiled copy of src/ (made once: transpiling src/ in every run is slow).
 */
function runExample(name: string, address: string): Promise<NodeRun> {
  sources ??= transpileSources();
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env))
    if (value !== undefined && !key.startsWith('COHORT_')) env[key] = value;
  return runNode(['scripts/run-example.js', join('examples', name)], {
    cwd: REPO_ROOT,
    env: { ...env, COHORT_ADDRESS: address, EXAMPLE_COHORT_ENTRY_POINT: sources.entryPoint },
  });
}

async function expectSuccess(run: Promise<NodeRun>): Promise<string[]> {
  const { code, stdout, stderr } = await run;
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  return stdout.trimEnd().split('\n');
}

/**
 * Every program in examples/ (the README's and docs/sdk.md's code, which test/unit/docs/doc-snippets.test.ts
 * keeps equal to these files) runs to its end against a real server, as a reader would run it, and prints
 * what the docs say it prints. The *.test.ts examples run as ordinary jest tests.
 */
describe('the examples', () => {
  let t: TestServer | undefined;

  // The initial rebalance delay (3 s by default) only slows these down; the pack test runs with it.
  const serve = async (): Promise<string> => {
    t = await startTestServer({ groupInitialRebalanceDelayMs: 0 });
    return t.target;
  };

  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  afterAll(() => sources?.remove());

  const checked = new Set<string>();
  const example = (name: string, test: () => Promise<void>): void => {
    checked.add(name);
    it(`${name} runs as shown against a real server`, test, 60_000);
  };

  example('sdk-in-ten-lines.ts', async () => {
    const address = await serve();
    expect(await expectSuccess(runExample('sdk-in-ten-lines.ts', address))).toEqual([
      'partition 1, offset 0: order 1', // murmur2, as Kafka partitions by key
    ]);
    // Run again, it resumes where the group committed: only the new record.
    expect(await expectSuccess(runExample('sdk-in-ten-lines.ts', address))).toEqual([
      'partition 1, offset 1: order 1',
    ]);
  });

  example('produce-and-consume.ts', async () => {
    const address = await serve();
    const first = await expectSuccess(runExample('produce-and-consume.ts', address));
    expect(first.slice(0, 2)).toEqual([
      'topic orders: created',
      expect.stringMatching(/^sent: \d@0 \d@\d \d@\d$/),
    ]);
    expect(first.filter((line) => / = order \d$/.test(line))).toHaveLength(3);
    const lags = first.filter((line) => line.startsWith('orders-'));
    expect(lags.length).toBeGreaterThan(0);
    for (const line of lags) expect(line).toMatch(/: committed \d+, lag 0$/);

    // "Run it again": three more records; the group starts where it committed, so only those are printed.
    const second = await expectSuccess(runExample('produce-and-consume.ts', address));
    expect(second[0]).toMatch(/^topic orders: .*already exists/i);
    const sent = second[1].replace('sent: ', '').split(' ');
    const consumed = second.filter((line) => / = order \d$/.test(line)).map((line) => line.split(' ')[0]);
    expect(consumed.sort()).toEqual([...sent].sort());
  });

  example('consumer-and-producer.ts', async () => {
    const lines = await expectSuccess(runExample('consumer-and-producer.ts', await serve()));
    // The handler may print before send() resolved.
    expect(lines.sort()).toEqual([
      'handled customer-7: {"total":12}',
      expect.stringMatching(/^sent to partition [0-5] at offset 0$/),
    ]);
  });

  example('group-member.ts', async () => {
    const lines = await expectSuccess(runExample('group-member.ts', await serve()));
    expect(lines).toEqual([
      'started shards 0 1 2 3 4 5 6 7 8 9 10 11',
      'shard 3: committed 1234',
      'committed and stopped 12 shards',
    ]);
  });

  example('custom-assignor.ts', async () => {
    const lines = await expectSuccess(runExample('custom-assignor.ts', await serve()));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^generation \d+: first: standby, (0 partitions; second: standby, 4|4 partitions; second: standby, 0) partitions$/,
    );
  });

  example('watch-groups.ts', async () => {
    const lines = await expectSuccess(runExample('watch-groups.ts', await serve()));
    expect(lines).toEqual([
      'snapshot: Dead, generation -1, 0 members',
      'group-created: Empty, generation 0, 0 members',
      'member-joined: PreparingRebalance, generation 0, 1 members',
      'join-completed: CompletingRebalance, generation 1, 1 members',
      'rebalance-completed: Stable, generation 1, 1 members',
      'member-left: PreparingRebalance, generation 1, 0 members',
      'group-emptied: Empty, generation 2, 0 members',
    ]);
  });

  it('runs every program in examples/', () => {
    const programs = readdirSync(EXAMPLES_DIR).filter(
      (name) => name.endsWith('.ts') && !name.endsWith('.test.ts'),
    );
    expect(programs.sort()).toEqual([...checked].sort());
  });
});

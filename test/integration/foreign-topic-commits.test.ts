import { ErrorCode } from '../../src/errors';
import { runCli } from '../support/run-cli';
import { startTestServer, type TestServer } from '../support/start-test-server';

/**
 * docs/clients.md, "Offsets of topics cohort does not host": a group that coordinates work held elsewhere
 * commits offsets of topics that are no topic of cohort's. The coordinator stores them as Kafka's does, and
 * `cohort groups describe` shows each CURRENT-OFFSET with no LOG-END-OFFSET and no LAG (`-`).
 */
describe('offsets committed for a topic cohort does not host', () => {
  let t: TestServer | undefined;

  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('are stored, fetched back, and described with no log end offset or lag', async () => {
    t = await startTestServer({ groupInitialRebalanceDelayMs: 0 });
    const coordinator = t.groupCoordinator();
    // A commit outside any generation (generation -1, no member id), as Kafka's admin tools commit.
    const committed = await coordinator.offsetCommit({
      groupId: 'tasks',
      generationId: -1,
      memberId: '',
      topics: [{ name: 'rows-in-postgres', partitions: [{ partitionIndex: 0, committedOffset: 42 }] }],
    } as Parameters<typeof coordinator.offsetCommit>[0]);
    expect(committed.topics[0].partitions[0].errorCode).toBe(ErrorCode.NONE);
    const fetched = await coordinator.offsetFetch({
      groupId: 'tasks',
      topics: [{ name: 'rows-in-postgres', partitionIndexes: [0] }],
    });
    expect(fetched.topics[0].partitions[0].committedOffset).toBe(42);

    const described = await runCli(['groups', 'describe', 'tasks', '--address', t.target]);
    expect(described.code).toBe(0);
    expect(described.stdout).toMatch(/^tasks +Empty +0 /m);
    expect(described.stdout).toMatch(/^tasks +rows-in-postgres +0 +42 +- +- +/m);
  });
});

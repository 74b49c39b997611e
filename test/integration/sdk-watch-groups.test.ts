import { CohortClient, CohortError, ErrorCode, RANGE_ASSIGNOR, type GroupWatchEvent } from '../../src';
import type { TestServer } from '../support/start-test-server';
import { startTestServer } from '../support/start-test-server';

/**
 * `client.watchGroups` against a real server: typed events from a snapshot on, members of the SDK moving
 * the group, and the three ways a watch ends — `break`, an aborted signal (both quietly, cancelling the
 * call), and the server going away (a CohortError).
 */

let t: TestServer;
let client: CohortClient;
let groupCounter = 0;
let groupId: string;

beforeEach(async () => {
  t = await startTestServer({ groupInitialRebalanceDelayMs: 0 });
  client = new CohortClient({ address: t.target, clientId: 'sdk-watch-test' });
  groupId = `sdk-watched-${++groupCounter}`;
});

afterEach(async () => {
  await client.close();
  await t.close();
});

/** Waits, a turn at a time, until `condition` holds. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

/** The next event of `events`; fails the test if the watch ends first. */
async function next(events: AsyncIterator<GroupWatchEvent>): Promise<GroupWatchEvent> {
  const result = await events.next();
  if (result.done === true) throw new Error('the watch ended');
  return result.value;
}

it('iterates a snapshot, then the changes a member makes, with the group described as describeGroups does', async () => {
  const events = client.watchGroups([groupId]);
  const snapshot = await next(events);
  expect(snapshot).toMatchObject({ reason: 'snapshot', isSnapshot: true });
  expect(snapshot.group.state).toBe('Dead');
  expect(snapshot.group.error).toBeInstanceOf(CohortError);
  expect(snapshot.group.error?.code).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  expect(typeof snapshot.timestampMs).toBe('number');

  const member = client.join({ groupId, protocols: [RANGE_ASSIGNOR], topics: [] });
  const seen: GroupWatchEvent[] = [];
  while (seen.at(-1)?.reason !== 'rebalance-completed') seen.push(await next(events));
  expect(seen.map((event) => event.reason)).toEqual([
    'group-created',
    'member-joined',
    'join-completed',
    'rebalance-completed',
  ]);
  const stable = seen.at(-1)!;
  expect(stable.group).toEqual((await client.admin().describeGroups([groupId]))[0]);
  expect(stable.group).toMatchObject({ state: 'Stable', generationId: 1, error: null });
  expect(stable.isSnapshot).toBe(false);

  await member.close();
  const left = await next(events);
  expect(left.reason).toBe('member-left');
  expect(left.group.members).toEqual([]);
  expect((await next(events)).reason).toBe('group-emptied');
  await events.return?.();
});

it('cancels the call on break, and ends quietly when its signal is aborted', async () => {
  for await (const event of client.watchGroups([groupId])) {
    expect(event.isSnapshot).toBe(true);
    break;
  }
  await until(() => t.server.groupWatches.size === 0);

  const controller = new AbortController();
  const received: GroupWatchEvent[] = [];
  const watching = (async () => {
    for await (const event of client.watchGroups([], { signal: controller.signal })) received.push(event);
  })();
  await until(() => t.server.groupWatches.size === 1);
  controller.abort();
  await watching; // no error: an aborted watch just finishes
  await until(() => t.server.groupWatches.size === 0);
});

it('throws a CohortError when the server goes away', async () => {
  const events = client.watchGroups([groupId]);
  expect((await next(events)).isSnapshot).toBe(true);
  await t.server.close();
  const failure = await events.next().then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(failure).toBeInstanceOf(CohortError);
  expect((failure as CohortError).code).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  expect((await events.next()).done).toBe(true);
});

import { CohortError, ErrorCode } from '../../../src/errors';
import type { GroupDescription } from '../../../src/client/cohort-admin';
import { GroupWatch, type GroupWatchTransport } from '../../../src/client/group-watch';
import type { GroupEvent } from '../../../src/protocol/group-messages';

/** A watch call driven by the test: it hands events and the end, and counts pauses and cancels. */
class FakeWatchCall implements GroupWatchTransport {
  onEvent: (event: GroupEvent) => void = () => undefined;
  onEnd: (error: CohortError | null) => void = () => undefined;
  readonly calls: string[] = [];

  watchGroups(
    _request: unknown,
    onEvent: (event: GroupEvent) => void,
    onEnd: (error: CohortError | null) => void,
  ) {
    this.onEvent = onEvent;
    this.onEnd = onEnd;
    return {
      cancel: () => this.calls.push('cancel'),
      pause: () => this.calls.push('pause'),
      resume: () => this.calls.push('resume'),
    };
  }
}

function wireEvent(groupId: string, reason: string): GroupEvent {
  return {
    group: {
      errorCode: ErrorCode.NONE,
      errorMessage: '',
      groupId,
      groupState: 'Empty',
      protocolType: '',
      protocolData: '',
      members: [],
      generationId: 0,
    },
    reason,
    timestampMs: 5,
    isSnapshot: false,
  };
}

const describe1 = (group: GroupEvent['group']): GroupDescription =>
  ({ groupId: group.groupId, state: group.groupState }) as GroupDescription;

it('stops reading while 64 events wait for the loop, and reads again once fewer than half wait', async () => {
  const call = new FakeWatchCall();
  const watch = new GroupWatch(call, { groupIds: [] }, describe1, undefined);
  for (let i = 0; i < 70; i++) call.onEvent(wireEvent(`g${i}`, 'group-created'));
  expect(call.calls).toEqual(['pause']);
  for (let i = 0; i < 39; i++) expect((await watch.next()).value?.group.groupId).toBe(`g${i}`);
  expect(call.calls).toEqual(['pause', 'resume']);
});

it('hands an event that arrives while the loop waits straight to it, then throws the end once', async () => {
  const call = new FakeWatchCall();
  const watch = new GroupWatch(call, { groupIds: ['a'] }, describe1, undefined);
  const waiting = watch.next();
  call.onEvent(wireEvent('a', 'member-joined'));
  expect((await waiting).value).toMatchObject({ reason: 'member-joined', timestampMs: 5 });
  const failure = new CohortError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'gone');
  call.onEnd(failure);
  await expect(watch.next()).rejects.toBe(failure);
  expect(await watch.next()).toEqual({ value: undefined, done: true });
  expect(call.calls).toEqual([]);
});

it('cancels the call on return and on abort, and is done after', async () => {
  const call = new FakeWatchCall();
  const watch = new GroupWatch(call, { groupIds: ['a'] }, describe1, undefined);
  call.onEvent(wireEvent('a', 'snapshot'));
  await watch.return();
  expect(await watch.next()).toEqual({ value: undefined, done: true });
  expect(call.calls).toEqual(['cancel']);

  const aborted = new FakeWatchCall();
  const controller = new AbortController();
  const watch2 = new GroupWatch(aborted, { groupIds: ['a'] }, describe1, controller.signal);
  const waiting = watch2.next();
  controller.abort();
  expect(await waiting).toEqual({ value: undefined, done: true });
  expect(aborted.calls).toEqual(['cancel']);
});

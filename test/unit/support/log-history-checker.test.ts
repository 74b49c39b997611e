import { LogHistory, type SeenRecord } from '../../support/log-history';
import {
  checkLogHistory,
  describeVerdict,
  failedChecks,
  type CheckName,
  type LogHistoryVerdict,
} from '../../support/log-history-checker';

const T0 = { topic: 't', partition: 0 };

/** A history on a counting clock (1 ms per reading), so messages are stable. */
function newHistory(): LogHistory {
  let nowMs = 0;
  return new LogHistory(() => nowMs++);
}

/** The records of `values`, at offsets from `first`, written in `leaderEpoch` if given. */
function records(values: readonly string[], first = 0, leaderEpoch?: number): SeenRecord[] {
  return values.map((value, i) => ({
    offset: first + i,
    value,
    ...(leaderEpoch === undefined ? {} : { leaderEpoch }),
  }));
}

function finalLog(
  history: LogHistory,
  nodeId: number,
  isLeader: boolean,
  held: readonly SeenRecord[],
  highWatermark: number,
): void {
  const logEndOffset = held.length === 0 ? highWatermark : held[held.length - 1]!.offset + 1;
  history.addFinalLog({
    ...T0,
    nodeId,
    isLeader,
    records: held,
    highWatermark,
    logEndOffset,
    source: 'fetch',
  });
}

/** A produce to node `nodeId` acknowledged at `offset`. */
function acked(history: LogHistory, process: string, value: string, offset: number, nodeId = 1): void {
  history.invokeProduce(process, { ...T0, nodeId }, value).ok(offset);
}

function check(history: LogHistory): LogHistoryVerdict {
  history.close();
  return checkLogHistory(history.snapshot());
}

/** Only `name` found anything; returns its violations. */
function onlyViolated(verdict: LogHistoryVerdict, name: CheckName): readonly string[] {
  expect(failedChecks(verdict)).toEqual([name]);
  expect(verdict.isValid).toBe(false);
  return verdict.checks.find((c) => c.name === name)!.violations;
}

describe('checkLogHistory', () => {
  it('accepts a correct history with unknown outcomes, failures, retried values and a failover', () => {
    const history = newHistory();
    acked(history, 'p1', 'a', 0);
    acked(history, 'p1', 'b', 1);
    // A timeout: "c" was appended at 2 anyway; the retry of the same value is acknowledged at 3.
    history.invokeProduce('p2', { ...T0, nodeId: 1 }, 'c').info('DEADLINE_EXCEEDED');
    acked(history, 'p2', 'c', 3);
    // Refused before any append, and never in the log.
    history.invokeProduce('p1', { ...T0, nodeId: 1 }, 'd').fail('NOT_ENOUGH_REPLICAS');
    // Unknown and never appended: also correct.
    history.invokeProduce('p2', { ...T0, nodeId: 1 }, 'e').info('connection lost');
    // Two produces in flight together may be acknowledged in either order.
    const g = history.invokeProduce('p1', { ...T0, nodeId: 2 }, 'g');
    const h = history.invokeProduce('p2', { ...T0, nodeId: 2 }, 'h');
    h.ok(4);
    g.ok(5);
    // Still pending when the run ends: unknown, and here it was appended on the old leader only.
    history.invokeProduce('p1', { ...T0, nodeId: 1 }, 'f');
    history.invokeFetch('c1', { ...T0, nodeId: 1 }, 0).ok(records(['a', 'b'], 0, 0), 2);
    history
      .invokeFetch('c1', { ...T0, nodeId: 2 }, 2)
      .ok([...records(['c', 'c'], 2, 0), ...records(['h', 'g'], 4, 1)], 6);
    history.invokeFetch('c1', { ...T0, nodeId: 1 }, 6).info('UNAVAILABLE');
    // Node 1 led at epoch 0; node 2 at epoch 1. Node 1, deposed, knows no leader at its old epoch.
    history.invokeMetadata(1)({ ...T0, leader: 1, leaderEpoch: 0, isr: [1, 2, 3] });
    history.invokeMetadata(2)({ ...T0, leader: 1, leaderEpoch: 0, isr: [1, 2, 3] });
    history.invokeMetadata(1)({ ...T0, leader: -1, leaderEpoch: 0, isr: [1, 2, 3] });
    // Two requests to node 2 in flight together: the answer with the newer epoch may arrive first.
    const older = history.invokeMetadata(2);
    const newer = history.invokeMetadata(2);
    newer({ ...T0, leader: 2, leaderEpoch: 1, isr: [2, 3] });
    older({ ...T0, leader: 1, leaderEpoch: 0, isr: [1, 2, 3] });
    const committed = records(['a', 'b', 'c', 'c', 'h', 'g']);
    finalLog(history, 2, true, committed, 6);
    finalLog(history, 3, false, committed, 6);
    // The old leader's tail beyond its high watermark differs from the leader's: allowed (it truncates).
    finalLog(history, 1, false, [...committed.slice(0, 4), { offset: 4, value: 'f' }], 4);

    const verdict = check(history);

    expect(describeVerdict(verdict)).toMatch(/^history valid/);
    expect(failedChecks(verdict)).toEqual([]);
    expect(verdict.stats).toMatchObject({
      produces: 9,
      acknowledgedWrites: 5,
      failedWrites: 1,
      unknownWrites: 3,
      reads: 2,
      recordsRead: 6,
      metadataObservations: 5,
      finalLogs: 3,
    });
  });

  it('reports an acknowledged write missing from the final leader', () => {
    const history = newHistory();
    acked(history, 'p1', 'a', 0);
    acked(history, 'p1', 'b', 1);
    finalLog(history, 2, true, records(['a']), 1);
    const [violation] = onlyViolated(check(history), 'acknowledged-write-lost');
    expect(violation).toMatch(
      /produce #1 by p1 .*"b" acknowledged at offset 1 .*final leader \(node 2\) has nothing there/,
    );
  });

  it('reports an acknowledged write overwritten by another value on the final leader', () => {
    const history = newHistory();
    acked(history, 'p1', 'a', 0);
    history.invokeProduce('p2', { ...T0, nodeId: 2 }, 'x').info('timeout');
    finalLog(history, 2, true, records(['x']), 1);
    const [violation] = onlyViolated(check(history), 'acknowledged-write-lost');
    expect(violation).toMatch(/"a" acknowledged at offset 0 .*has "x" there/);
  });

  it('reports an acknowledged write the final leader holds only above its high watermark', () => {
    const history = newHistory();
    acked(history, 'p1', 'a', 0);
    finalLog(history, 2, true, records(['a']), 0);
    const [violation] = onlyViolated(check(history), 'acknowledged-write-lost');
    expect(violation).toMatch(/at or above the final leader's \(node 2\) high watermark 0/);
  });

  it('reports two produces acknowledged at the same offset', () => {
    const history = newHistory();
    const a = history.invokeProduce('p1', { ...T0, nodeId: 1 }, 'a');
    const b = history.invokeProduce('p2', { ...T0, nodeId: 2 }, 'b');
    a.ok(0);
    b.ok(0);
    finalLog(history, 1, true, records(['a']), 1);
    // "b" is lost as well; the shared offset is reported by its own check.
    const verdict = check(history);
    expect(failedChecks(verdict)).toEqual(['acknowledged-write-lost', 'acknowledged-writes-ordered']);
    expect(verdict.checks.find((c) => c.name === 'acknowledged-writes-ordered')!.violations).toEqual([
      expect.stringMatching(
        /produce #0 by p1 .* and produce #1 by p2 .* both acknowledged at offset 0 of t-0/,
      ),
    ]);
  });

  it('reports a produce acknowledged before another was sent but given a higher offset', () => {
    const history = newHistory();
    acked(history, 'p1', 'a', 1);
    acked(history, 'p2', 'b', 0);
    finalLog(history, 1, true, records(['b', 'a']), 2);
    const [violation] = onlyViolated(check(history), 'acknowledged-writes-ordered');
    expect(violation).toMatch(/produce #1 by p2 .* got offset 0 of t-0, but produce #0 by p1 .* offset 1/);
  });

  it('reports a read record that the final leader no longer holds', () => {
    const history = newHistory();
    history.invokeProduce('p1', { ...T0, nodeId: 1 }, 'a').info('timeout');
    history.invokeFetch('c1', { ...T0, nodeId: 1 }, 0).ok(records(['a']), 1);
    finalLog(history, 2, true, [], 0);
    const [violation] = onlyViolated(check(history), 'read-vanished');
    expect(violation).toMatch(
      /fetch #1 by c1 to node 1 .* read "a" at offset 0 .* final leader \(node 2\) has nothing there/,
    );
  });

  it('reports a read record the final leader holds only above its high watermark', () => {
    const history = newHistory();
    history.invokeProduce('p1', { ...T0, nodeId: 1 }, 'a').info('timeout');
    history.invokeFetch('c1', { ...T0, nodeId: 1 }, 0).ok(records(['a']), 1);
    finalLog(history, 1, true, records(['a']), 0);
    const [violation] = onlyViolated(check(history), 'read-vanished');
    expect(violation).toMatch(/read "a" at offset 0 .* high watermark 0/);
  });

  it('reports a consumer handed a record at or above the high watermark of the same answer', () => {
    const history = newHistory();
    acked(history, 'p1', 'a', 0);
    acked(history, 'p1', 'b', 1);
    history.invokeFetch('c1', { ...T0, nodeId: 1 }, 0).ok(records(['a', 'b']), 1);
    finalLog(history, 1, true, records(['a', 'b']), 2);
    const [violation] = onlyViolated(check(history), 'read-above-high-watermark');
    expect(violation).toMatch(/read "b" at offset 1 .* high watermark 1 of the same answer/);
  });

  it('reports a value whose every produce failed in the committed log', () => {
    const history = newHistory();
    history.invokeProduce('p1', { ...T0, nodeId: 1 }, 'a').fail('NOT_ENOUGH_REPLICAS');
    history.invokeProduce('p1', { ...T0, nodeId: 1 }, 'a').fail('NOT_ENOUGH_REPLICAS');
    finalLog(history, 1, true, records(['a']), 1);
    const [violation] = onlyViolated(check(history), 'failed-write-visible');
    expect(violation).toMatch(
      /final leader \(node 1\) of t-0 holds "a" at offset 0, but every produce of it failed: .*NOT_ENOUGH_REPLICAS/,
    );
  });

  it('reports a record nobody produced, in the log or in a read', () => {
    const history = newHistory();
    history.invokeFetch('c1', { ...T0, nodeId: 1 }, 0).ok(records(['ghost']), 1);
    finalLog(history, 1, true, records(['ghost']), 1);
    const violations = onlyViolated(check(history), 'phantom-record');
    expect(violations).toEqual([
      expect.stringMatching(
        /final leader \(node 1\) of t-0 holds "ghost" at offset 0, which no producer sent/,
      ),
      expect.stringMatching(/answer to fetch #0 by c1 .* holds "ghost"/),
    ]);
  });

  it('reports two leaders named for one leader epoch', () => {
    const history = newHistory();
    history.invokeMetadata(1)({ ...T0, leader: 1, leaderEpoch: 3, isr: [1, 2] });
    history.invokeMetadata(2)({ ...T0, leader: 2, leaderEpoch: 3, isr: [2] });
    finalLog(history, 2, true, [], 0);
    const [violation] = onlyViolated(check(history), 'one-leader-per-epoch');
    expect(violation).toBe(
      't-0 leader epoch 3: node 1 named leader 1 (event 1), node 2 named leader 2 (event 3)',
    );
  });

  it('reports a node whose leader epoch went back between answers not in flight together', () => {
    const history = newHistory();
    history.invokeMetadata(3)({ ...T0, leader: 2, leaderEpoch: 4, isr: [2, 3] });
    history.invokeMetadata(3)({ ...T0, leader: 1, leaderEpoch: 2, isr: [1, 3] });
    finalLog(history, 2, true, [], 0);
    const [violation] = onlyViolated(check(history), 'leader-epoch-monotonic');
    expect(violation).toBe(
      'node 3 reported leader epoch 2 of t-0 (event 3) after it had reported 4 (event 1, before this request was sent)',
    );
  });

  it('reports a replica whose records below its high watermark differ from the leader', () => {
    const history = newHistory();
    acked(history, 'p1', 'a', 0);
    history.invokeProduce('p1', { ...T0, nodeId: 1 }, 'b').info('timeout');
    history.invokeProduce('p2', { ...T0, nodeId: 2 }, 'c').info('timeout');
    finalLog(history, 2, true, records(['a', 'c']), 2);
    finalLog(history, 1, false, records(['a', 'b']), 2);
    const [violation] = onlyViolated(check(history), 'replica-prefix-of-leader');
    expect(violation).toMatch(
      /node 1's replica of t-0 \(high watermark 2\) has "b" at offset 1, the leader \(node 2\) "c"/,
    );
  });

  it('reports a replica lacking a record below its high watermark', () => {
    const history = newHistory();
    acked(history, 'p1', 'a', 0);
    acked(history, 'p1', 'b', 1);
    acked(history, 'p1', 'c', 2);
    finalLog(history, 2, true, records(['a', 'b', 'c']), 3);
    finalLog(
      history,
      3,
      false,
      [
        { offset: 0, value: 'a' },
        { offset: 2, value: 'c' },
      ],
      3,
    );
    const [violation] = onlyViolated(check(history), 'replica-prefix-of-leader');
    expect(violation).toMatch(/node 3's replica of t-0 \(high watermark 3\) lacks offset 1, .* as "b"/);
  });

  it('reports an offset read with two leader epochs, and epochs going down as offsets go up', () => {
    const history = newHistory();
    acked(history, 'p1', 'a', 0);
    acked(history, 'p1', 'b', 1);
    history
      .invokeFetch('c1', { ...T0, nodeId: 1 }, 0)
      .ok([...records(['a'], 0, 3), ...records(['b'], 1, 2)], 2);
    history.invokeFetch('c2', { ...T0, nodeId: 1 }, 0).ok(records(['a'], 0, 4), 2);
    finalLog(history, 1, true, records(['a', 'b']), 2);
    expect(onlyViolated(check(history), 'record-leader-epochs')).toEqual([
      expect.stringMatching(
        /^offset 0 of t-0 \("a"\) was read with leader epoch 3 by fetch #2 .* and 4 by fetch #3/,
      ),
      't-0: offset 1 was written in leader epoch 2, after offset 0 in epoch 3',
    ]);
  });

  it('reports a write acknowledged by a node other than the leader of the epoch it was written in', () => {
    const history = newHistory();
    acked(history, 'p1', 'a', 0, 1);
    history.invokeMetadata(3)({ ...T0, leader: 2, leaderEpoch: 5, isr: [2, 3] });
    history.invokeFetch('c1', { ...T0, nodeId: 2 }, 0).ok(records(['a'], 0, 5), 1);
    finalLog(history, 2, true, records(['a']), 1);
    const [violation] = onlyViolated(check(history), 'acknowledged-by-epoch-leader');
    expect(violation).toMatch(
      /produce #0 by p1 to node 1 .*"a" acknowledged at offset 0 was written in leader epoch 5, whose leader node 3 named as 2/,
    );
  });

  it('refuses a history without a final leader, or with two', () => {
    const none = newHistory();
    acked(none, 'p1', 'a', 0);
    expect(onlyViolated(check(none), 'well-formed')).toEqual([
      'no final leader log of t-0: nothing can be checked against it',
    ]);
    const two = newHistory();
    finalLog(two, 1, true, [], 0);
    finalLog(two, 2, true, [], 0);
    expect(onlyViolated(check(two), 'well-formed')).toEqual([
      'final log of t-0 on node 2: a second final leader (node 1 too)',
    ]);
  });

  it('closes pending operations as unknown and drops answers that arrive after the close', () => {
    const history = newHistory();
    const late = history.invokeProduce('p1', { ...T0, nodeId: 1 }, 'a');
    const report = history.invokeMetadata(1);
    history.close();
    late.ok(0);
    report({ ...T0, leader: 1, leaderEpoch: 0, isr: [1] });
    const { events, metadata } = history.snapshot();
    expect(events.map((e) => e.type)).toEqual(['invoke', 'info']);
    expect(metadata).toEqual([]);
  });

  it('refuses to complete an operation twice', () => {
    const history = newHistory();
    const produce = history.invokeProduce('p1', { ...T0, nodeId: 1 }, 'a');
    produce.ok(0);
    expect(() => produce.info('again')).toThrow('operation 0 completed twice');
  });
});

import { GroupHistory } from '../../support/group-history';
import { checkGroupHistory, type GroupCheckName } from '../../support/group-history-checker';

const TP = { groupId: 'g', topic: 't', partition: 0 };

function violated(history: GroupHistory): GroupCheckName[] {
  return checkGroupHistory(history.close())
    .checks.filter((check) => check.violations.length > 0)
    .map((check) => check.name);
}

/** A commit sent and answered `outcome`; returns its offset. */
function commit(history: GroupHistory, outcome: 'ok' | 'fail' | 'info' | 'pending', nodeId = 1): number {
  const offset = history.takeCommitOffset();
  const op = history.invokeCommit(TP, 'm1', nodeId, offset, 1);
  if (outcome === 'ok') history.commitOk(op);
  else if (outcome !== 'pending') history.completeWithError(op, outcome, outcome);
  return offset;
}

function read(history: GroupHistory, offset: number, process = 'reader'): void {
  history.readOk(history.invokeRead(TP, process, 1), offset);
}

describe('checkGroupHistory', () => {
  it('accepts a history in which the last acknowledged commit survives and reads move forward', () => {
    const h = new GroupHistory();
    const a = commit(h, 'ok');
    read(h, a);
    const b = commit(h, 'ok');
    read(h, b);
    h.addFinal({ ...TP, offset: b });
    const verdict = checkGroupHistory(h.close());
    expect(verdict.isValid).toBe(true);
    expect(verdict.stats).toMatchObject({ commits: 2, acknowledgedCommits: 2, reads: 2 });
  });

  it('flags an acknowledged commit that is gone after a failover', () => {
    const h = new GroupHistory();
    const a = commit(h, 'ok');
    commit(h, 'ok');
    h.addFinal({ ...TP, offset: a });
    expect(violated(h)).toEqual(['acknowledged-commit-lost']);
  });

  it('flags a group whose offsets are gone entirely', () => {
    const h = new GroupHistory();
    commit(h, 'ok');
    h.addFinal({ ...TP, offset: -1 });
    expect(violated(h)).toEqual(['acknowledged-commit-lost']);
  });

  it('allows concurrent commits to land in either order', () => {
    const h = new GroupHistory();
    const first = h.takeCommitOffset();
    const opFirst = h.invokeCommit(TP, 'm1', 1, first, 1);
    const second = h.takeCommitOffset();
    const opSecond = h.invokeCommit(TP, 'm2', 1, second, 1);
    h.commitOk(opSecond);
    h.commitOk(opFirst);
    h.addFinal({ ...TP, offset: first });
    expect(violated(h)).toEqual([]);
  });

  it('allows a commit of unknown outcome to be the final offset, or not', () => {
    const kept = new GroupHistory();
    commit(kept, 'ok');
    const unknown = commit(kept, 'info');
    kept.addFinal({ ...TP, offset: unknown });
    expect(violated(kept)).toEqual([]);

    const dropped = new GroupHistory();
    const acked = commit(dropped, 'ok');
    commit(dropped, 'pending');
    dropped.addFinal({ ...TP, offset: acked });
    expect(violated(dropped)).toEqual([]);
  });

  it('flags a read older than a commit acknowledged before it was sent', () => {
    const h = new GroupHistory();
    const a = commit(h, 'ok');
    const b = commit(h, 'ok');
    read(h, a);
    h.addFinal({ ...TP, offset: b });
    expect(violated(h)).toEqual(['read-lost-commit']);
  });

  it('flags a read that a later read contradicts', () => {
    const h = new GroupHistory();
    const a = commit(h, 'ok');
    const b = commit(h, 'info');
    read(h, b, 'r1');
    read(h, a, 'r2');
    h.addFinal({ ...TP, offset: b });
    expect(violated(h)).toEqual(['read-vanished']);
  });

  it('flags an offset whose commit failed, and one nobody committed', () => {
    const failed = new GroupHistory();
    commit(failed, 'ok');
    const refused = commit(failed, 'fail');
    failed.addFinal({ ...TP, offset: refused });
    expect(violated(failed)).toEqual(['failed-commit-visible']);

    const phantom = new GroupHistory();
    const a = commit(phantom, 'ok');
    phantom.addFinal({ ...TP, offset: a });
    read(phantom, 999);
    expect(violated(phantom)).toEqual(['phantom-offset']);
  });

  it('flags a member handed two assignments in one generation, and a partition handed twice', () => {
    const twice = new GroupHistory();
    twice.observeAssignment({
      groupId: 'g',
      memberId: 'm1',
      generationId: 3,
      partitions: ['t-0'],
      nodeId: 1,
    });
    twice.observeAssignment({
      groupId: 'g',
      memberId: 'm1',
      generationId: 3,
      partitions: ['t-1'],
      nodeId: 2,
    });
    expect(violated(twice)).toEqual(['one-assignment-per-generation']);

    const shared = new GroupHistory();
    shared.observeAssignment({
      groupId: 'g',
      memberId: 'm1',
      generationId: 3,
      partitions: ['t-0'],
      nodeId: 1,
    });
    shared.observeAssignment({
      groupId: 'g',
      memberId: 'm2',
      generationId: 3,
      partitions: ['t-0'],
      nodeId: 1,
    });
    expect(violated(shared)).toEqual(['one-assignment-per-generation']);

    const fine = new GroupHistory();
    fine.observeAssignment({
      groupId: 'g',
      memberId: 'm1',
      generationId: 3,
      partitions: ['t-1', 't-0'],
      nodeId: 1,
    });
    fine.observeAssignment({
      groupId: 'g',
      memberId: 'm1',
      generationId: 3,
      partitions: ['t-0', 't-1'],
      nodeId: 2,
    });
    fine.observeAssignment({ groupId: 'g', memberId: 'm1', generationId: 4, partitions: ['t-2'], nodeId: 2 });
    expect(violated(fine)).toEqual([]);
  });

  it('counts pending operations as unknown when the history closes', () => {
    const h = new GroupHistory();
    commit(h, 'pending');
    const verdict = checkGroupHistory(h.close());
    expect(verdict.stats.unknownCommits).toBe(1);
    expect(verdict.isValid).toBe(true);
  });
});

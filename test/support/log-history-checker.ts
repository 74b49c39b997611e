import type {
  FinalReplicaLog,
  HistoryEvent,
  LogHistorySnapshot,
  MetadataObservation,
  SeenRecord,
} from './log-history';

/**
 * The invariants a replicated log owes its clients, checked over a recorded history (log-history.ts)
 * after the run, as etcd's robustness tests and Jepsen do: faults are injected freely, nothing is asserted
 * while they happen, and the whole history is judged at the end.
 *
 * Each check has a name and says, per violation, which operation or observation broke it:
 * - `well-formed`: the history itself is usable (each operation invoked once and completed at most once,
 *   one final leader per partition, final logs in offset order). Anything else is checked only on it.
 * - `acknowledged-write-lost` (a): every ok produce's (offset, value) is in the final leader's log at
 *   that offset, below its high watermark.
 * - `acknowledged-writes-ordered` (b): no two ok produces share an offset, and a produce acknowledged
 *   before another was sent has the lower offset (real-time order).
 * - `read-vanished` (c): every (offset, value) a consumer read is in the final leader's log at that
 *   offset, below its high watermark: nothing read is later gone.
 * - `read-above-high-watermark`: a consumer is never handed a record at or above the high watermark of
 *   the same answer (it would be uncommitted).
 * - `failed-write-visible`: a value whose every produce certainly failed is never in the committed log
 *   or in a read; `phantom-record`: nothing in either was produced by nobody.
 * - `one-leader-per-epoch` (d): no two nodes name different leaders of a partition for one leader epoch
 *   (an answer without a leader, -1, names none).
 * - `leader-epoch-monotonic` (d): a node never reports a lower leader epoch for a partition in an answer
 *   requested after an answer of its with a higher one arrived.
 * - `replica-prefix-of-leader` (e): every replica's records below its high watermark are the leader's
 *   records at those offsets, and it lacks none of them.
 * - `record-leader-epochs`: where reads carry the epoch each record was written in, an offset has one
 *   epoch whoever read it, and epochs never go down as offsets go up (KIP-101's epoch boundaries).
 * - `acknowledged-by-epoch-leader`: a write acknowledged by node N is stored in an epoch no node
 *   attributes to a leader other than N (a deposed leader that acknowledged into another's epoch, or
 *   two nodes leading one epoch, is split brain).
 *
 * Values are the identity of writes: the harness makes each produced value unique, except that a client
 * may send a value again after an `info` (outcome unknown), so a value may sit at several offsets.
 */
export const CHECK_NAMES = [
  'well-formed',
  'acknowledged-write-lost',
  'acknowledged-writes-ordered',
  'read-vanished',
  'read-above-high-watermark',
  'failed-write-visible',
  'phantom-record',
  'one-leader-per-epoch',
  'leader-epoch-monotonic',
  'replica-prefix-of-leader',
  'record-leader-epochs',
  'acknowledged-by-epoch-leader',
] as const;
export type CheckName = (typeof CHECK_NAMES)[number];

export interface CheckResult {
  readonly name: CheckName;
  readonly violations: readonly string[];
}

export interface LogHistoryStats {
  readonly partitions: number;
  readonly produces: number;
  readonly acknowledgedWrites: number;
  readonly failedWrites: number;
  readonly unknownWrites: number;
  readonly reads: number;
  readonly recordsRead: number;
  readonly metadataObservations: number;
  readonly finalLogs: number;
}

export interface LogHistoryVerdict {
  readonly isValid: boolean;
  /** Every check, in CHECK_NAMES order. */
  readonly checks: readonly CheckResult[];
  readonly stats: LogHistoryStats;
}

/** Names of the checks that found something, for `expect(...).toEqual([])`. */
export function failedChecks(verdict: LogHistoryVerdict): CheckName[] {
  return verdict.checks.filter((check) => check.violations.length > 0).map((check) => check.name);
}

/** A readable report: each failed check with its first `limit` violations. */
export function describeVerdict(verdict: LogHistoryVerdict, limit = 20): string {
  if (verdict.isValid) return `history valid: ${JSON.stringify(verdict.stats)}`;
  const lines = [`history INVALID: ${JSON.stringify(verdict.stats)}`];
  for (const check of verdict.checks) {
    if (check.violations.length === 0) continue;
    lines.push(`${check.name}: ${check.violations.length} violation(s)`);
    for (const violation of check.violations.slice(0, limit)) lines.push(`  - ${violation}`);
    if (check.violations.length > limit) lines.push(`  … and ${check.violations.length - limit} more`);
  }
  return lines.join('\n');
}

type Completion = Extract<HistoryEvent, { type: 'ok' | 'fail' | 'info' }>;

interface Operation {
  readonly invoke: HistoryEvent;
  completion?: Completion;
}

interface ReplicaView {
  readonly log: FinalReplicaLog;
  readonly byOffset: ReadonlyMap<number, string>;
}

const partitionKey = (p: { readonly topic: string; readonly partition: number }): string =>
  `${p.topic}-${p.partition}`;

function pushTo<T>(map: Map<string, T[]>, key: string, item: T): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [item]);
  else list.push(item);
}

function describeOp(op: Operation): string {
  const e = op.invoke;
  return `${e.f} #${e.opId} by ${e.process} to node ${e.nodeId} (sent at event ${e.index}, ${Math.round(e.atMs)} ms)`;
}

function quoted(value: string | undefined): string {
  return value === undefined ? 'nothing' : JSON.stringify(value);
}

export function checkLogHistory(history: LogHistorySnapshot): LogHistoryVerdict {
  const violations = new Map<CheckName, string[]>(CHECK_NAMES.map((name) => [name, []]));
  const report = (name: CheckName, message: string): void => void violations.get(name)!.push(message);

  // --- well-formed: operations ---
  const operations = new Map<number, Operation>();
  for (const event of history.events) {
    const op = operations.get(event.opId);
    if (event.type === 'invoke') {
      if (op !== undefined)
        report('well-formed', `operation #${event.opId} invoked twice (event ${event.index})`);
      else operations.set(event.opId, { invoke: event });
      continue;
    }
    if (op === undefined) {
      report('well-formed', `event ${event.index} completes operation #${event.opId}, never invoked`);
    } else if (op.completion !== undefined) {
      report(
        'well-formed',
        `${describeOp(op)} completed twice (events ${op.completion.index}, ${event.index})`,
      );
    } else if (op.invoke.f !== event.f || event.index < op.invoke.index) {
      report('well-formed', `event ${event.index} does not complete ${describeOp(op)}`);
    } else {
      op.completion = event;
    }
  }

  // --- well-formed: final logs; the final leader of each partition ---
  const leaders = new Map<string, ReplicaView>();
  const followers: ReplicaView[] = [];
  for (const log of history.finalLogs) {
    const where = `final log of ${partitionKey(log)} on node ${log.nodeId}`;
    const byOffset = new Map<number, string>();
    let previous = -1;
    for (const record of log.records) {
      if (record.offset <= previous)
        report('well-formed', `${where}: offset ${record.offset} follows ${previous} (not in offset order)`);
      if (record.offset >= log.logEndOffset)
        report(
          'well-formed',
          `${where}: offset ${record.offset} at or above its log end ${log.logEndOffset}`,
        );
      previous = record.offset;
      byOffset.set(record.offset, record.value);
    }
    if (log.highWatermark > log.logEndOffset)
      report(
        'well-formed',
        `${where}: high watermark ${log.highWatermark} above log end ${log.logEndOffset}`,
      );
    const view = { log, byOffset };
    if (!log.isLeader) followers.push(view);
    else if (leaders.has(partitionKey(log)))
      report(
        'well-formed',
        `${where}: a second final leader (node ${leaders.get(partitionKey(log))!.log.nodeId} too)`,
      );
    else leaders.set(partitionKey(log), view);
  }
  const partitions = new Set<string>(history.finalLogs.map(partitionKey));
  for (const op of operations.values()) partitions.add(partitionKey(op.invoke));
  for (const key of partitions) {
    if (!leaders.has(key))
      report('well-formed', `no final leader log of ${key}: nothing can be checked against it`);
  }

  const ops = [...operations.values()];
  const acknowledged = ops.filter(
    (op): op is Operation & { completion: Extract<Completion, { f: 'produce'; type: 'ok' }> } =>
      op.invoke.f === 'produce' && op.completion?.type === 'ok',
  );
  const reads = ops.filter(
    (op): op is Operation & { completion: Extract<Completion, { f: 'fetch'; type: 'ok' }> } =>
      op.invoke.f === 'fetch' && op.completion?.type === 'ok',
  );

  // --- (a) acknowledged-write-lost ---
  for (const op of acknowledged) {
    const leader = leaders.get(partitionKey(op.invoke));
    if (leader === undefined) continue;
    const { offset } = op.completion;
    const value = (op.invoke as Extract<HistoryEvent, { f: 'produce' }>).value;
    const held = leader.byOffset.get(offset);
    const what = `${describeOp(op)}: ${quoted(value)} acknowledged at offset ${offset} (event ${op.completion.index})`;
    if (held !== value) {
      report(
        'acknowledged-write-lost',
        `${what}, but the final leader (node ${leader.log.nodeId}) has ${quoted(held)} there ` +
          `(its log ends at ${leader.log.logEndOffset})`,
      );
    } else if (offset >= leader.log.highWatermark) {
      report(
        'acknowledged-write-lost',
        `${what} is at or above the final leader's (node ${leader.log.nodeId}) high watermark ` +
          `${leader.log.highWatermark}: no consumer can read it`,
      );
    }
  }

  // --- (b) acknowledged-writes-ordered ---
  const byPartition = new Map<string, typeof acknowledged>();
  for (const op of acknowledged) {
    pushTo(byPartition, partitionKey(op.invoke), op);
  }
  for (const [key, partitionOps] of byPartition) {
    const atOffset = new Map<number, (typeof acknowledged)[number]>();
    for (const op of partitionOps) {
      const other = atOffset.get(op.completion.offset);
      if (other !== undefined) {
        report(
          'acknowledged-writes-ordered',
          `${describeOp(other)} and ${describeOp(op)} were both acknowledged at offset ` +
            `${op.completion.offset} of ${key}`,
        );
      } else {
        atOffset.set(op.completion.offset, op);
      }
    }
    // Sweep in invoke order, keeping the highest offset among produces acknowledged before that invoke.
    const byAck = [...partitionOps].sort((a, b) => a.completion.index - b.completion.index);
    const byInvoke = [...partitionOps].sort((a, b) => a.invoke.index - b.invoke.index);
    let cursor = 0;
    let highest: (typeof acknowledged)[number] | undefined;
    for (const op of byInvoke) {
      while (cursor < byAck.length && byAck[cursor]!.completion.index < op.invoke.index) {
        const done = byAck[cursor++]!;
        if (highest === undefined || done.completion.offset > highest.completion.offset) highest = done;
      }
      if (highest !== undefined && op.completion.offset <= highest.completion.offset) {
        report(
          'acknowledged-writes-ordered',
          `${describeOp(op)} got offset ${op.completion.offset} of ${key}, but ${describeOp(highest)} ` +
            `was acknowledged before it was sent (event ${highest.completion.index}) with offset ` +
            `${highest.completion.offset}`,
        );
      }
    }
  }

  // --- (c) read-vanished, read-above-high-watermark ---
  for (const op of reads) {
    const leader = leaders.get(partitionKey(op.invoke));
    for (const record of op.completion.records) {
      const what = `${describeOp(op)} read ${quoted(record.value)} at offset ${record.offset} (event ${op.completion.index})`;
      if (record.offset >= op.completion.highWatermark) {
        report(
          'read-above-high-watermark',
          `${what}, at or above the high watermark ${op.completion.highWatermark} of the same answer`,
        );
      }
      if (leader === undefined) continue;
      const held = leader.byOffset.get(record.offset);
      if (held !== record.value) {
        report(
          'read-vanished',
          `${what}, but the final leader (node ${leader.log.nodeId}) has ${quoted(held)} there ` +
            `(its log ends at ${leader.log.logEndOffset})`,
        );
      } else if (record.offset >= leader.log.highWatermark) {
        report(
          'read-vanished',
          `${what}, at or above the final leader's (node ${leader.log.nodeId}) high watermark ` +
            `${leader.log.highWatermark}`,
        );
      }
    }
  }

  // --- failed-write-visible, phantom-record ---
  const attempts = new Map<string, Operation[]>();
  for (const op of ops) {
    if (op.invoke.f !== 'produce') continue;
    pushTo(attempts, `${partitionKey(op.invoke)}\u0000${op.invoke.value}`, op);
  }
  const checkProduced = (where: string, partition: string, record: SeenRecord): void => {
    const sent = attempts.get(`${partition}\u0000${record.value}`);
    if (sent === undefined) {
      report(
        'phantom-record',
        `${where} holds ${quoted(record.value)} at offset ${record.offset}, which no producer sent to ${partition}`,
      );
    } else if (sent.every((op) => op.completion?.type === 'fail')) {
      report(
        'failed-write-visible',
        `${where} holds ${quoted(record.value)} at offset ${record.offset}, but every produce of it failed: ` +
          sent.map((op) => `${describeOp(op)}: ${(op.completion as { reason: string }).reason}`).join('; '),
      );
    }
  };
  for (const [key, leader] of leaders) {
    for (const record of leader.log.records) {
      if (record.offset < leader.log.highWatermark)
        checkProduced(`the final leader (node ${leader.log.nodeId}) of ${key}`, key, record);
    }
  }
  for (const op of reads) {
    for (const record of op.completion.records)
      checkProduced(`the answer to ${describeOp(op)}`, partitionKey(op.invoke), record);
  }

  // --- (d) one-leader-per-epoch, leader-epoch-monotonic ---
  const leaderAtEpoch = new Map<string, MetadataObservation>();
  for (const observation of history.metadata) {
    if (observation.leader < 0) continue;
    const key = `${partitionKey(observation)}@${observation.leaderEpoch}`;
    const first = leaderAtEpoch.get(key);
    if (first === undefined) leaderAtEpoch.set(key, observation);
    else if (first.leader !== observation.leader) {
      report(
        'one-leader-per-epoch',
        `${partitionKey(observation)} leader epoch ${observation.leaderEpoch}: node ${first.nodeId} named ` +
          `leader ${first.leader} (event ${first.index}), node ${observation.nodeId} named leader ` +
          `${observation.leader} (event ${observation.index})`,
      );
    }
  }
  const observationsOf = new Map<string, MetadataObservation[]>();
  for (const observation of history.metadata) {
    pushTo(observationsOf, `${observation.nodeId}/${partitionKey(observation)}`, observation);
  }
  for (const list of observationsOf.values()) {
    // Sweep in send order, keeping the highest epoch among answers that arrived before that send.
    const byArrival = [...list].sort((a, b) => a.index - b.index);
    const bySend = [...list].sort((a, b) => a.sentIndex - b.sentIndex);
    let cursor = 0;
    let highest: MetadataObservation | undefined;
    for (const observation of bySend) {
      while (cursor < byArrival.length && byArrival[cursor]!.index < observation.sentIndex) {
        const seen = byArrival[cursor++]!;
        if (highest === undefined || seen.leaderEpoch > highest.leaderEpoch) highest = seen;
      }
      if (highest !== undefined && observation.leaderEpoch < highest.leaderEpoch) {
        report(
          'leader-epoch-monotonic',
          `node ${observation.nodeId} reported leader epoch ${observation.leaderEpoch} of ` +
            `${partitionKey(observation)} (event ${observation.index}) after it had reported ` +
            `${highest.leaderEpoch} (event ${highest.index}, before this request was sent)`,
        );
      }
    }
  }

  // --- (e) replica-prefix-of-leader ---
  for (const follower of followers) {
    const key = partitionKey(follower.log);
    const leader = leaders.get(key);
    if (leader === undefined) continue;
    const where = `node ${follower.log.nodeId}'s replica of ${key} (high watermark ${follower.log.highWatermark})`;
    const firstOffset = follower.log.records[0]?.offset ?? follower.log.logEndOffset;
    for (const record of follower.log.records) {
      if (record.offset >= follower.log.highWatermark) break;
      const held = leader.byOffset.get(record.offset);
      if (held !== record.value) {
        report(
          'replica-prefix-of-leader',
          `${where} has ${quoted(record.value)} at offset ${record.offset}, the leader (node ` +
            `${leader.log.nodeId}) ${quoted(held)}`,
        );
      }
    }
    for (const record of leader.log.records) {
      if (record.offset >= follower.log.highWatermark) break;
      if (record.offset >= firstOffset && !follower.byOffset.has(record.offset)) {
        report(
          'replica-prefix-of-leader',
          `${where} lacks offset ${record.offset}, which the leader (node ${leader.log.nodeId}) holds as ` +
            `${quoted(record.value)}`,
        );
      }
    }
  }

  // --- record-leader-epochs ---
  const epochsRead = new Map<string, Map<number, { epoch: number; value: string; op: Operation }>>();
  for (const op of reads) {
    const key = partitionKey(op.invoke);
    let atOffset = epochsRead.get(key);
    if (atOffset === undefined) epochsRead.set(key, (atOffset = new Map()));
    for (const record of op.completion.records) {
      if (record.leaderEpoch === undefined) continue;
      const seen = atOffset.get(record.offset);
      if (seen === undefined)
        atOffset.set(record.offset, { epoch: record.leaderEpoch, value: record.value, op });
      else if (seen.epoch !== record.leaderEpoch && seen.value === record.value) {
        report(
          'record-leader-epochs',
          `offset ${record.offset} of ${key} (${quoted(record.value)}) was read with leader epoch ${seen.epoch} ` +
            `by ${describeOp(seen.op)} and ${record.leaderEpoch} by ${describeOp(op)}`,
        );
      }
    }
  }
  for (const [key, atOffset] of epochsRead) {
    let previous: { offset: number; epoch: number } | undefined;
    for (const offset of [...atOffset.keys()].sort((a, b) => a - b)) {
      const { epoch } = atOffset.get(offset)!;
      if (previous !== undefined && epoch < previous.epoch) {
        report(
          'record-leader-epochs',
          `${key}: offset ${offset} was written in leader epoch ${epoch}, after offset ${previous.offset} in ` +
            `epoch ${previous.epoch}`,
        );
      }
      previous = { offset, epoch };
    }
  }

  // --- acknowledged-by-epoch-leader ---
  for (const op of acknowledged) {
    const key = partitionKey(op.invoke);
    const read = epochsRead.get(key)?.get(op.completion.offset);
    const value = (op.invoke as Extract<HistoryEvent, { f: 'produce' }>).value;
    if (read === undefined || read.value !== value) continue;
    const named = leaderAtEpoch.get(`${key}@${read.epoch}`);
    if (named !== undefined && named.leader !== op.invoke.nodeId) {
      report(
        'acknowledged-by-epoch-leader',
        `${describeOp(op)}: ${quoted(value)} acknowledged at offset ${op.completion.offset} was written in ` +
          `leader epoch ${read.epoch}, whose leader node ${named.nodeId} named as ${named.leader} ` +
          `(event ${named.index})`,
      );
    }
  }

  const checks = CHECK_NAMES.map((name) => ({ name, violations: violations.get(name)! }));
  const produces = ops.filter((op) => op.invoke.f === 'produce');
  return {
    isValid: checks.every((check) => check.violations.length === 0),
    checks,
    stats: {
      partitions: partitions.size,
      produces: produces.length,
      acknowledgedWrites: acknowledged.length,
      failedWrites: produces.filter((op) => op.completion?.type === 'fail').length,
      unknownWrites: produces.filter((op) => op.completion === undefined || op.completion.type === 'info')
        .length,
      reads: reads.length,
      recordsRead: reads.reduce((sum, op) => sum + op.completion.records.length, 0),
      metadataObservations: history.metadata.length,
      finalLogs: history.finalLogs.length,
    },
  };
}

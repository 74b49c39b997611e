import fc from 'fast-check';
import { Controller } from '../../../src/cluster/controller';
import { ControllerElection } from '../../../src/cluster/controller-election';
import { InMemoryEtcd } from '../../../src/cluster/in-memory-metadata-store';
import { NodeSession, nodeKey } from '../../../src/cluster/node-session';
import { decodePartitionState, NO_LEADER, type PartitionState } from '../../../src/cluster/partition-state';
import { SystemTimer } from '../../../src/timer';
import { ManualTime } from '../../../src/time';
import { settle } from '../../support/metadata-store-harness';

/**
 * For any sequence of node joins and leaves, once the controller has settled every partition is led by
 * a live ISR member, or has no leader and no live ISR member (no live replica at all with unclean
 * election); and each write moves a partition's leader epoch up by exactly one, even when the
 * controller's writes lose their answers (applied or not).
 */
describe('Controller (property)', () => {
  const clusterId = 'p';
  const others = [2, 3, 4, 5];
  const retryBackoffMs = 500;
  /** The most ops a scenario has, and so the most lost answers it can arm. */
  const MAX_LOST_ANSWERS = 25;

  async function scenario(
    ops: readonly { readonly node: number; readonly up: boolean; readonly lose?: boolean }[],
    uncleanLeaderElection: boolean,
  ): Promise<void> {
    const time = new ManualTime();
    const timer = new SystemTimer({ time });
    const etcd = new InMemoryEtcd({ time });
    const admin = etcd.connect();
    const store = etcd.connect();
    const session = new NodeSession({
      store,
      time,
      timer,
      clusterId,
      nodeId: 1,
      advertisedAddress: '127.0.0.1:7071',
      sessionTimeoutMs: 10_000,
    });
    const election = new ControllerElection({ store, session, timer, clusterId, nodeId: 1 });
    const controller = new Controller({
      store,
      election,
      timer,
      clusterId,
      uncleanLeaderElection,
      random: () => 0,
      retryBackoffMs,
    });
    const epochs = new Map<string, number>();
    const states = new Map<string, PartitionState>();
    const jumps: string[] = [];
    admin.watch(
      `/${clusterId}/partitions/`,
      { prefix: true, startRevision: 1 },
      {
        onEvents: (events) => {
          for (const { type, kv } of events) {
            if (type !== 'put') continue;
            const next = decodePartitionState(kv.key, kv.value);
            // Only the controller writes here, and each of its writes is one election: exactly one up.
            const previous = epochs.get(kv.key);
            if (previous !== undefined && next.leaderEpoch !== previous + 1) {
              jumps.push(`${kv.key}: ${previous} -> ${next.leaderEpoch}`);
            }
            epochs.set(kv.key, next.leaderEpoch);
            states.set(kv.key, next);
          }
        },
        onCancelled: () => undefined,
      },
    );
    const flush = async (): Promise<void> => {
      for (let i = 0; i < 10; i++) {
        await settle();
        await controller.idle();
      }
    };
    // A partition whose writes kept losing their answers is decided again by a resync after the backoff.
    const flushWithBackoffs = async (): Promise<void> => {
      for (let i = 0; i < MAX_LOST_ANSWERS; i++) {
        time.advance(retryBackoffMs);
        await flush();
      }
    };
    try {
      controller.start();
      session.start();
      election.start();
      const live = new Set([1, ...others]);
      for (const id of others) await admin.put(nodeKey(clusterId, id), 'x');
      await flush();
      // Node 1 (the controller) may hold replicas too: it never leaves.
      expect(await controller.createTopic('t', 5, 3)).toMatchObject({ outcome: 'created' });
      await flush();
      for (const { node, up, lose } of ops) {
        // The controller's next write loses its answer, applied or not.
        if (lose !== undefined) store.loseNextResponse({ applied: lose });
        if (up) await admin.put(nodeKey(clusterId, node), 'x');
        else await admin.delete(nodeKey(clusterId, node));
        if (up) live.add(node);
        else live.delete(node);
        await flush();
      }
      await flushWithBackoffs();
      expect(jumps).toEqual([]);
      const { kvs } = await admin.range(`/${clusterId}/topics/`);
      const assignment = JSON.parse(kvs[0].value) as { partitions: number[][] };
      assignment.partitions.forEach((replicas, p) => {
        const current = states.get(`/${clusterId}/partitions/t/${p}`)!;
        if (current.leader !== NO_LEADER) {
          expect(live.has(current.leader)).toBe(true);
          expect(current.isr).toContain(current.leader);
          expect(current.isr.every((id) => live.has(id))).toBe(true);
        } else {
          expect(current.isr.some((id) => live.has(id))).toBe(false);
          if (uncleanLeaderElection) expect(replicas.some((id) => live.has(id))).toBe(false);
        }
      });
    } finally {
      controller.close();
      await Promise.race([Promise.all([election.close(), session.close()]), settle()]);
      admin.close();
      timer.shutdown();
      etcd.shutdown();
    }
  }

  it('every partition ends led by a live ISR member (or offline with none), each write one epoch up, lost answers included', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record(
            { node: fc.constantFrom(...others), up: fc.boolean(), lose: fc.boolean() },
            { requiredKeys: ['node', 'up'] },
          ),
          { maxLength: MAX_LOST_ANSWERS },
        ),
        fc.boolean(),
        (ops, unclean) => scenario(ops, unclean),
      ),
      { numRuns: 60 },
    );
  });
});

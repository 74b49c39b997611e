import { ControllerElection, fencedTxn } from '../../src/cluster/controller-election';
import { EtcdMetadataStore } from '../../src/cluster/etcd-metadata-store';
import { NodeSession } from '../../src/cluster/node-session';
import { SystemTimer } from '../../src/timer';
import { SYSTEM_TIME } from '../../src/time';
import { startEtcd, type EtcdProcess } from '../support/etcd';

/**
 * Three nodes campaign for controller on a real etcd while faults are injected into the etcd process
 * (SIGKILL and restart, SIGSTOP past the session TTL, a revoked controller lease). Every election event
 * is recorded, and the history is checked afterwards: at no recorded moment do two nodes believe they are
 * controller (except after the revocation, which gives the old controller no deadline: there the fence
 * must refuse it), each epoch is won once, epochs only grow, and once the faults stop the nodes agree on
 * one controller.
 */
let etcd: EtcdProcess;
beforeAll(async () => {
  etcd = await startEtcd();
}, 300_000);
afterAll(() => etcd?.stop());

interface Entry {
  readonly atMs: number;
  readonly nodeId: number;
  readonly event: 'elected' | 'resigned';
  readonly epoch: number;
  /** Every node that believed it was controller right after the event. */
  readonly controllers: readonly number[];
  readonly phase: Phase;
}

type Phase = 'start' | 'restart' | 'freeze' | 'revoke';

it('never has two controllers at once across etcd restarts, freezes and revocations', async () => {
  const clusterId = `faults-${process.pid}`;
  const timer = new SystemTimer({ time: SYSTEM_TIME });
  const history: Entry[] = [];
  let phase: Phase = 'start';
  const nodes = [1, 2, 3].map((nodeId) => {
    const store = new EtcdMetadataStore({ endpoints: etcd.endpoints, requestTimeoutMs: 1_000 });
    const session = new NodeSession({
      store,
      time: SYSTEM_TIME,
      timer,
      clusterId,
      nodeId,
      advertisedAddress: `127.0.0.1:${7070 + nodeId}`,
      sessionTimeoutMs: 2_000,
      retryBackoffMs: 200,
    });
    const election = new ControllerElection({
      store,
      session,
      timer,
      clusterId,
      nodeId,
      retryBackoffMs: 200,
    });
    return { nodeId, store, session, election };
  });
  const controllers = (): number[] => nodes.filter((n) => n.election.isController()).map((n) => n.nodeId);
  for (const node of nodes) {
    const record = (event: Entry['event'], epoch: number): void => {
      history.push({
        atMs: SYSTEM_TIME.monotonicMs(),
        nodeId: node.nodeId,
        event,
        epoch,
        controllers: controllers(),
        phase,
      });
    };
    node.election.on('elected', ({ controllerEpoch }) => record('elected', controllerEpoch));
    node.election.on('resigned', ({ controllerEpoch }) => record('resigned', controllerEpoch));
    node.session.start();
    node.election.start();
  }
  /** Resolves when every node agrees on one controller at `minEpoch` or later, which believes it is one. */
  const converged = async (minEpoch = 0): Promise<number> => {
    const giveUpAt = Date.now() + 15_000;
    while (Date.now() < giveUpAt) {
      const now = controllers();
      const epochs = new Set(nodes.map((n) => n.election.controller.controllerEpoch));
      const [epoch] = epochs;
      if (
        now.length === 1 &&
        epochs.size === 1 &&
        epoch >= minEpoch &&
        nodes.every((n) => n.session.isActive())
      ) {
        return epoch;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`no agreement on a controller; history: ${JSON.stringify(history)}`);
  };
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  try {
    const epochs = [await converged()];

    phase = 'restart';
    await etcd.kill();
    await etcd.restart();
    epochs.push(await converged());

    phase = 'freeze';
    await etcd.pause();
    await pause(3_000); // past the 2 s TTL: every session must have expired on its own deadline
    expect(controllers()).toEqual([]);
    etcd.resume();
    epochs.push(await converged(epochs[1] + 1));

    // An operator revokes the controller's lease. Unlike an expiry, this gives the old controller no
    // deadline to stop by: until its watch delivers the deletion it may still believe it leads, so here
    // only the fence protects the data.
    phase = 'revoke';
    const controller = nodes.find((n) => n.election.isController())!;
    await nodes[0].store.revokeLease(controller.session.leaseId!);
    epochs.push(await converged(epochs[2] + 1));
    const stale = await fencedTxn(controller.store, clusterId, epochs[2], {
      compare: [],
      success: [{ type: 'put', key: `/${clusterId}/topics/t`, value: 'stale' }],
    });
    expect(stale).toEqual({ outcome: 'notController', currentEpoch: epochs[3] });

    // Epochs only grow across faults (a restart may keep the same controller and epoch).
    expect(epochs[1]).toBeGreaterThanOrEqual(epochs[0]);

    // The history's invariants.
    for (const entry of history) {
      if (entry.phase !== 'revoke') expect(entry.controllers.length).toBeLessThanOrEqual(1);
    }
    const elected = history.filter((e) => e.event === 'elected');
    const winners = new Map<number, number>();
    for (const entry of elected) {
      expect(winners.get(entry.epoch) ?? entry.nodeId).toBe(entry.nodeId);
      winners.set(entry.epoch, entry.nodeId);
    }
    for (let i = 1; i < elected.length; i++) expect(elected[i].epoch).toBeGreaterThan(elected[i - 1].epoch);
    // Each node's role alternates: elected, resigned, elected...
    for (const node of nodes) {
      const own = history.filter((e) => e.nodeId === node.nodeId).map((e) => e.event);
      own.forEach((event, i) => expect(event).toBe(i % 2 === 0 ? 'elected' : 'resigned'));
    }
  } finally {
    etcd.resume();
    for (const node of nodes) {
      await node.election.close();
      await node.session.close();
      node.store.close();
    }
    timer.shutdown();
  }
}, 60_000);

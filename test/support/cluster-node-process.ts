/**
 * A cluster node in a process of its own, for tests that stop it with SIGSTOP: a node session and a
 * controller election on a real etcd, printing one JSON line per event and, every 50 ms, whether it
 * believes it is the controller. `wallMs` lets the test line events up with its own signals.
 *
 * Environment: ETCD_ENDPOINTS (comma-separated), CLUSTER_ID, NODE_ID, SESSION_TIMEOUT_MS.
 * SIGTERM closes the election and the session and exits 0.
 */
import { ControllerElection } from '../../src/cluster/controller-election';
import { EtcdMetadataStore } from '../../src/cluster/etcd-metadata-store';
import { NodeSession } from '../../src/cluster/node-session';
import { SystemTimer } from '../../src/timer';
import { SYSTEM_TIME } from '../../src/time';

const endpoints = (process.env.ETCD_ENDPOINTS ?? '').split(',');
const clusterId = process.env.CLUSTER_ID ?? 'cohort';
const nodeId = Number(process.env.NODE_ID ?? '1');
const sessionTimeoutMs = Number(process.env.SESSION_TIMEOUT_MS ?? '2000');

const print = (line: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify({ wallMs: Date.now(), ...line })}\n`);
};

const store = new EtcdMetadataStore({ endpoints, requestTimeoutMs: 1_000 });
const timer = new SystemTimer({ time: SYSTEM_TIME });
const session = new NodeSession({
  store,
  time: SYSTEM_TIME,
  timer,
  clusterId,
  nodeId,
  advertisedAddress: `127.0.0.1:${7070 + nodeId}`,
  sessionTimeoutMs,
});
const election = new ControllerElection({ store, session, timer, clusterId, nodeId });
session.on('active', ({ incarnation, leaseId }) => print({ event: 'active', incarnation, leaseId }));
session.on('expired', ({ incarnation, reason }) => print({ event: 'expired', incarnation, reason }));
election.on('elected', ({ controllerEpoch }) => print({ event: 'elected', controllerEpoch }));
election.on('resigned', ({ controllerEpoch, reason }) =>
  print({ event: 'resigned', controllerEpoch, reason }),
);
election.on('controllerChanged', ({ controllerId, controllerEpoch }) =>
  print({ event: 'controllerChanged', controllerId, controllerEpoch }),
);
const ticker = setInterval(() => print({ event: 'tick', isController: election.isController() }), 50);

session.start();
election.start();

process.once('SIGTERM', () => {
  clearInterval(ticker);
  // Closing talks to etcd, which may be gone: exit anyway after a moment.
  setTimeout(() => process.exit(0), 2_000).unref();
  void (async () => {
    await election.close();
    await session.close();
    store.close();
    timer.shutdown();
    process.exit(0);
  })();
});

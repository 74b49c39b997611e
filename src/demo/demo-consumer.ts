/**
 * A demo consumer, in a process of its own: joins the demo group when told `go` on stdin, consumes and
 * commits, and reports its group events as JSON lines (see demo-events.ts). SIGTERM closes it cleanly (it
 * commits and leaves the group); SIGKILL is how the demo stops one without a goodbye.
 */
import { createInterface } from 'node:readline';
import { CohortClient } from '../client/cohort-client';
import { report, type DemoChildConfig } from './demo-events';

const config = JSON.parse(process.argv[2] ?? '{}') as DemoChildConfig;
const client = new CohortClient({ bootstrap: config.bootstrap, clientId: config.name });
const consumer = client.consumer({
  groupId: config.groupId,
  topics: [config.topic],
  autoOffsetReset: 'earliest',
  sessionTimeoutMs: config.sessionTimeoutMs,
  heartbeatIntervalMs: config.heartbeatIntervalMs,
  rebalanceTimeoutMs: 10_000,
  autoCommitIntervalMs: 500,
  closeTimeoutMs: 5_000,
});
const numbers = (partitions: readonly { partition: number }[]): number[] =>
  partitions.map((p) => p.partition);
consumer.on('assigned', (e) =>
  report({
    event: 'assigned',
    generationId: e.generationId,
    memberId: e.memberId,
    isLeader: e.isLeader,
    partitions: numbers(e.partitions),
    added: numbers(e.added),
  }),
);
consumer.on('revoked', (e) =>
  report({ event: 'revoked', reason: e.reason, partitions: numbers(e.partitions) }),
);
consumer.on('lost', (e) => report({ event: 'lost', reason: e.reason, partitions: numbers(e.partitions) }));

let total = 0;
let isStopping = false;
const progress = setInterval(() => report({ event: 'consumed', total }), 1_000);
const stop = (status: number): void => {
  if (isStopping) return;
  isStopping = true;
  clearInterval(progress);
  void client.close().then(() => process.exit(status));
};
process.on('SIGTERM', () => stop(0));
process.on('SIGINT', () => stop(0));

const commands = createInterface({ input: process.stdin });
commands.on('line', (line) => {
  if (line.trim() !== 'go') return;
  consumer
    .run({
      eachMessage: () => {
        total++;
      },
    })
    .catch((error: unknown) => {
      report({ event: 'failed', message: error instanceof Error ? error.message : String(error) });
      stop(1);
    });
});
// The demo went away: do not linger.
commands.on('close', () => stop(0));
report({ event: 'ready' });

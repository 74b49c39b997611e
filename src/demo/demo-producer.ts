/**
 * The demo producer, in a process of its own: sends `recordsPerSecond` records keyed by customer (so each
 * customer's records stay in order on one partition), and reports its total every second. SIGTERM stops
 * it after every record sent is acknowledged.
 */
import { createInterface } from 'node:readline';
import { CohortClient } from '../client/cohort-client';
import { report, type DemoChildConfig } from './demo-events';

const CUSTOMERS = 12;

const config = JSON.parse(process.argv[2] ?? '{}') as DemoChildConfig;
const client = new CohortClient({ bootstrap: config.bootstrap, clientId: config.name });
const producer = client.producer({ acks: -1, lingerMs: 5 });

let sent = 0;
let acknowledged = 0;
let isStopping = false;
const tick = setInterval(
  () => {
    const n = sent++;
    producer.send({ topic: config.topic, key: `customer-${n % CUSTOMERS}`, value: `order ${n}` }).then(
      () => void acknowledged++,
      (error: unknown) => {
        report({ event: 'failed', message: error instanceof Error ? error.message : String(error) });
        stop(1);
      },
    );
  },
  Math.max(1, Math.round(1_000 / config.recordsPerSecond)),
);
const progress = setInterval(() => report({ event: 'produced', total: acknowledged }), 1_000);

const stop = (status: number): void => {
  if (isStopping) return;
  isStopping = true;
  clearInterval(tick);
  clearInterval(progress);
  void client.close().then(() => {
    report({ event: 'produced', total: acknowledged });
    process.exit(status);
  });
};
process.on('SIGTERM', () => stop(0));
process.on('SIGINT', () => stop(0));
createInterface({ input: process.stdin }).on('close', () => stop(0));
report({ event: 'ready' });

/* global process */
/**
 * One consumer-group member on KafkaJS, in a process of its own (so that a test can SIGKILL it), driven by
 * test/support/kafka-member-process.ts. The same arguments, output and commands as kafka-member.py:
 * node kafkajs-member.js BOOTSTRAP TOPIC GROUP CLIENT_ID SESSION_TIMEOUT_MS ASSIGNOR, where ASSIGNOR is
 * KafkaJS's RoundRobinAssigner (its protocol name "RoundRobinAssigner") whatever is asked: KafkaJS ships
 * no other.
 */
const { createInterface } = require('node:readline');
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, topic, groupId, clientId, sessionTimeout] = process.argv.slice(2);
const emit = (event) => process.stdout.write(JSON.stringify(event) + '\n');
const text = (buffer) => (buffer === null ? null : buffer.toString('utf8'));

const kafka = new Kafka({ clientId, brokers: [bootstrap], logLevel: logLevel.NOTHING });
const consumer = kafka.consumer({
  groupId,
  sessionTimeout: Number(sessionTimeout),
  heartbeatInterval: 300,
  maxWaitTimeInMs: 100,
  rebalanceTimeout: 60_000,
});
/** The next offset to commit, by partition: one past the last record read. */
const consumed = new Map();

consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
  emit({ assigned: [...(payload.memberAssignment[topic] ?? [])].sort((a, b) => a - b) });
});
consumer.on(consumer.events.CRASH, ({ payload }) => {
  process.stderr.write(`${payload.error.stack}\n`);
  emit({ error: payload.error.code ?? -1 });
});

let leaving = false;
async function leave() {
  if (leaving) return;
  leaving = true;
  await consumer.disconnect();
  emit({ left: true });
  process.exit(0);
}

async function commit() {
  const offsets = [...consumed].map(([partition, offset]) => ({ topic, partition, offset: String(offset) }));
  if (offsets.length > 0) await consumer.commitOffsets(offsets);
  emit({ committed: true });
}

createInterface({ input: process.stdin })
  .on('line', (line) => void (line === 'commit' ? commit() : line === 'leave' ? leave() : undefined))
  .on('close', () => void leave());

(async () => {
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      consumed.set(partition, Number(message.offset) + 1);
      emit({
        record: {
          partition,
          offset: Number(message.offset),
          key: text(message.key),
          value: text(message.value),
        },
      });
    },
  });
})();

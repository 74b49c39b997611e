/**
 * The `client.consumer()` and `client.producer()` sections of docs/sdk.md show the regions below; around
 * them, a consumer that handles one record and closes.
 */
import { once } from 'node:events';
import { CohortClient, type ConsumerRecord } from 'cohort';

const address = process.env.COHORT_ADDRESS ?? '127.0.0.1:7070'; // where `npm start` listens

async function main(): Promise<void> {
  const client = new CohortClient({ address, clientId: 'billing' });
  await client.admin().createTopics([{ name: 'orders', numPartitions: 6 }]); // an existing topic is fine
  let handled: () => void = () => undefined;
  const firstHandled = new Promise<void>((resolve) => (handled = resolve));
  async function handle(message: ConsumerRecord): Promise<void> {
    console.log(`handled ${message.key}: ${message.value}`);
    handled();
  }

  // #region consumer
  const consumer = client.consumer({ groupId: 'billing', topics: ['orders'], autoOffsetReset: 'earliest' });
  const running = consumer.run({
    eachMessage: async ({ message }) => handle(message),
  });
  // #endregion consumer
  await once(consumer, 'assigned');

  // #region producer
  const producer = client.producer({ acks: -1 });
  const { partition, offset } = await producer.send({
    topic: 'orders',
    key: 'customer-7',
    value: '{"total":12}',
  });
  // #endregion producer
  console.log(`sent to partition ${partition} at offset ${offset}`);

  await firstHandled;
  await consumer.close();
  await running;
  await client.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

import { CohortClient } from 'cohort';

const address = process.env.COHORT_ADDRESS ?? '127.0.0.1:7070'; // where `npm start` listens

async function main(): Promise<void> {
  const client = new CohortClient({ address, clientId: 'billing' });
  await client.admin().createTopics([{ name: 'orders', numPartitions: 6 }]); // an existing topic is fine
  const producer = client.producer({ acks: -1 });
  const sent = await producer.send({ topic: 'orders', key: 'customer-7', value: 'order 1' });
  const consumer = client.consumer({ groupId: 'billing', topics: ['orders'], autoOffsetReset: 'earliest' });
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      console.log(`partition ${partition}, offset ${message.offset}: ${message.value}`);
      if (partition === sent.partition && message.offset === sent.offset) void consumer.close(); // commits, leaves
    },
  }); // resolves once the consumer has closed
  await client.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

import { CohortClient } from 'cohort';

const address = process.env.COHORT_ADDRESS ?? '127.0.0.1:7070'; // where `npm start` listens

async function main(): Promise<void> {
  const client = new CohortClient({ address, clientId: 'sdk-example' });
  const [created] = await client.admin().createTopics([{ name: 'orders', numPartitions: 6 }]);
  console.log('topic orders:', created.error === null ? 'created' : created.error.message);

  const producer = client.producer({ acks: -1 });
  const sent = await Promise.all(
    ['alice', 'bob', 'carol'].map((customer, i) =>
      producer.send({ topic: 'orders', key: customer, value: `order ${i}` }),
    ),
  );
  console.log('sent:', sent.map((m) => `${m.partition}@${m.offset}`).join(' '));

  const consumer = client.consumer({ groupId: 'billing', topics: ['orders'], autoOffsetReset: 'earliest' });
  consumer.on('assigned', ({ generationId, partitions }) =>
    console.log(`generation ${generationId}:`, partitions.map((p) => p.partition).join(' ')),
  );
  const unseen = new Set(sent.map((m) => `${m.partition}@${m.offset}`));
  const running = consumer.run({
    eachMessage: async ({ partition, message }) => {
      console.log(`${partition}@${message.offset} ${message.key} = ${message.value}`);
      unseen.delete(`${partition}@${message.offset}`);
      if (unseen.size === 0) void consumer.close(); // commits what was processed, leaves the group
    },
  });
  await running; // resolves once the consumer has closed; rejects if it failed

  const group = await client.admin().describeConsumerGroup('billing');
  for (const p of group.partitions)
    console.log(`${p.topic}-${p.partition}: committed ${p.committedOffset}, lag ${p.lag}`);
  await client.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

/**
 * A bare group member (docs/sdk.md, `client.join`): the sections on joining, the stall guard and offsets
 * show the regions below. Around them, a member that does a little work on its shards, commits, and closes.
 */
import { once } from 'node:events';
import { CohortClient, type TopicPartition } from 'cohort';

const address = process.env.COHORT_ADDRESS ?? '127.0.0.1:7070'; // where `npm start` listens

async function main(): Promise<void> {
  const client = new CohortClient({ address, clientId: 'shards' });
  const owned = new Map<number, bigint>(); // shard → how far its work got
  function startWork(partitions: readonly TopicPartition[]): void {
    for (const { partition } of partitions) owned.set(partition, 0n);
    console.log('started shards', partitions.map((p) => p.partition).join(' '));
  }
  async function stopAndCommit(partitions: readonly TopicPartition[]): Promise<void> {
    await member.commitOffsets(partitions.map((p) => ({ ...p, offset: owned.get(p.partition) ?? 0n })));
    for (const { partition } of partitions) owned.delete(partition);
    console.log(`committed and stopped ${partitions.length} shards`);
  }
  function abandon(partitions: readonly TopicPartition[]): void {
    for (const { partition } of partitions) owned.delete(partition);
  }

  // #region join
  const member = client.join({
    groupId: 'shards',
    topics: ['shard'],
    partitionsPerTopic: new Map([['shard', 12]]),
    sessionTimeoutMs: 10_000,
    heartbeatIntervalMs: 1_000,
  });
  member.on('assigned', ({ added }) => startWork(added));
  member.on('revoked', (event) => event.waitUntil(stopAndCommit(event.partitions))); // commitOffsets inside
  member.on('lost', ({ partitions }) => abandon(partitions));
  member.on('error', (error) => console.error('member failed:', error));
  // #endregion join
  await once(member, 'assigned');

  const batch = [...owned.keys()];
  async function handleBatch(shards: readonly number[], signal: AbortSignal): Promise<void> {
    for (const shard of shards) if (!signal.aborted) owned.set(shard, (owned.get(shard) ?? 0n) + 1n);
  }
  // #region process
  await member.process(async (signal) => handleBatch(batch, signal));
  // #endregion process

  // #region offsets
  await member.commitOffsets([{ topic: 'shard', partition: 3, offset: 1234n, metadata: 'optional' }]);
  const committed = await member.fetchOffsets([{ topic: 'shard', partition: 3 }]); // [{ ..., offset: 1234n | null }]
  // #endregion offsets
  console.log(`shard 3: committed ${committed[0].offset}`);

  await member.close(); // revokes (stopAndCommit runs), then sends LeaveGroup
  await client.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

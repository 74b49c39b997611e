/**
 * Your own assignor (docs/sdk.md, "Assignors"): every partition goes to one member, the others stand by.
 * Two members of one group use it; the program prints who got what in the first generation with both.
 */
import { CohortClient, type AssignedEvent, type PartitionAssignor, type TopicPartition } from 'cohort';

const address = process.env.COHORT_ADDRESS ?? '127.0.0.1:7070'; // where `npm start` listens

// #region assignor
const standby: PartitionAssignor = {
  name: 'standby',
  rebalanceProtocol: 'eager',
  // Deterministic, and an entry for every member: all partitions to the member id that sorts first.
  assign: (members, partitionsPerTopic) => {
    const active = members.map((m) => m.memberId).sort()[0];
    const assignment = new Map(members.map((m) => [m.memberId, [] as TopicPartition[]]));
    for (const [topic, count] of partitionsPerTopic)
      for (let partition = 0; partition < count; partition++)
        assignment.get(active)?.push({ topic, partition });
    return assignment;
  },
};
// #endregion assignor

async function main(): Promise<void> {
  const client = new CohortClient({ address, clientId: 'jobs' });
  const options = {
    groupId: 'jobs',
    topics: ['job'],
    partitionsPerTopic: new Map([['job', 4]]),
    protocols: [standby],
  };
  const members = { first: client.join(options), second: client.join(options) };
  // Print the first generation both members are in: one of them owns all four partitions.
  const byGeneration = new Map<number, string[]>();
  await new Promise<void>((resolve) => {
    for (const [name, member] of Object.entries(members))
      member.on('assigned', ({ generationId, protocolName, partitions }: AssignedEvent) => {
        const lines = byGeneration.get(generationId) ?? [];
        byGeneration.set(generationId, [
          ...lines,
          `${name}: ${protocolName}, ${partitions.length} partitions`,
        ]);
        if (lines.length === 1) {
          console.log(`generation ${generationId}:`, byGeneration.get(generationId)?.sort().join('; '));
          resolve();
        }
      });
  });
  await client.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

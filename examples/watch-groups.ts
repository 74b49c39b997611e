/**
 * Watching a group (docs/sdk.md, `client.watchGroups`): the loop of the docs, around a member that joins
 * the group and leaves it, so the watch has changes to print. It stops once the group is empty again.
 */
import { CohortClient, type GroupWatchEvent } from 'cohort';

const address = process.env.COHORT_ADDRESS ?? '127.0.0.1:7070'; // where `npm start` listens

async function main(): Promise<void> {
  const client = new CohortClient({ address, clientId: 'watcher' });
  let member: ReturnType<CohortClient['join']> | undefined;
  /** What this example does on each event: a member joins after the snapshot, leaves once it is Stable. */
  function react(event: GroupWatchEvent, controller: AbortController): void {
    if (event.isSnapshot) member = client.join({ groupId: 'watched', topics: [] });
    else if (event.reason === 'rebalance-completed') void member?.close();
    else if (event.reason === 'group-emptied') controller.abort(); // ends the loop, quietly
  }

  // #region watch
  const controller = new AbortController();
  for await (const event of client.watchGroups(['watched'], { signal: controller.signal })) {
    const { group } = event;
    console.log(
      `${event.reason}: ${group.state}, generation ${group.generationId}, ${group.members.length} members`,
    );
    react(event, controller);
  }
  // #endregion watch
  await client.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

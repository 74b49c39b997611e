import type { AssignedEvent, LostEvent, RevokedEvent } from '../client/group-member-events';
import type { TopicPartition } from '../client/topic-partition';

/** What `cohort consume --print-group-events` listens to: a consumer's membership events. */
export interface GroupEventSource {
  on(event: 'assigned', listener: (event: AssignedEvent) => void): unknown;
  on(event: 'revoked', listener: (event: RevokedEvent) => void): unknown;
  on(event: 'lost', listener: (event: LostEvent) => void): unknown;
}

/** `demo [0, 3]  other [1]`: partitions by topic, as `npm run demo` prints them. */
function partitionsText(partitions: readonly TopicPartition[]): string {
  if (partitions.length === 0) return 'nothing';
  const byTopic = new Map<string, number[]>();
  for (const tp of partitions) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
  return [...byTopic].map(([topic, list]) => `${topic} [${list.join(', ')}]`).join('  ');
}

/**
 * Writes one line per membership event of `consumer`, in the words `npm run demo` uses, so a rebalance can
 * be watched: `joined generation 1 as leader: owns demo [0, 3]`, `gives up demo [0, 3] (rebalance),
 * committing first`, `assigned in generation 2: owns demo [0, 2, 3] (new: demo [2])`, `lost demo [1]
 * (session-expired)`. Each line starts with `prefix`.
 */
export function writeGroupEvents(
  consumer: GroupEventSource,
  prefix: string,
  write: (line: string) => void,
): void {
  let hasJoined = false;
  consumer.on('assigned', (event) => {
    const verb = hasJoined ? 'assigned in' : 'joined';
    hasJoined = true;
    const isPartial = event.added.length > 0 && event.added.length < event.partitions.length;
    write(
      `${prefix}${verb} generation ${event.generationId}${event.isLeader ? ' as leader' : ''}: ` +
        `owns ${partitionsText(event.partitions)}${isPartial ? ` (new: ${partitionsText(event.added)})` : ''}\n`,
    );
  });
  consumer.on('revoked', (event) => {
    if (event.partitions.length === 0) return;
    write(`${prefix}gives up ${partitionsText(event.partitions)} (${event.reason}), committing first\n`);
  });
  consumer.on('lost', (event) => {
    write(`${prefix}lost ${partitionsText(event.partitions)} (${event.reason})\n`);
  });
}

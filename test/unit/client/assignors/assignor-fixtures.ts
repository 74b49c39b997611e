import type { AssignorMember, Subscription } from '../../../../src/client/assignors';
import type { TopicPartition } from '../../../../src/client/topic-partition';

/** A member subscribed to `topics`; `owned` as "t0-1" strings. */
export function member(
  memberId: string,
  topics: string[],
  extra: { owned?: string[]; generationId?: number; groupInstanceId?: string } = {},
): AssignorMember {
  const subscription: Subscription = {
    topics,
    ownedPartitions: (extra.owned ?? []).map(tp),
    ...(extra.generationId !== undefined ? { generationId: extra.generationId } : {}),
  };
  return {
    memberId,
    subscription,
    ...(extra.groupInstanceId !== undefined ? { groupInstanceId: extra.groupInstanceId } : {}),
  };
}

/** "t0-1" → { topic: 't0', partition: 1 } */
export function tp(text: string): TopicPartition {
  const at = text.lastIndexOf('-');
  return { topic: text.slice(0, at), partition: Number(text.slice(at + 1)) };
}

/** An assignment as plain `{ memberId: ["t0-1", ...] }`, for readable expectations. */
export function readable(assignment: Map<string, TopicPartition[]>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [memberId, list] of assignment) out[memberId] = list.map((p) => `${p.topic}-${p.partition}`);
  return out;
}

export function topics(entries: Record<string, number>): Map<string, number> {
  return new Map(Object.entries(entries));
}

import { GroupMember } from '../../../../src/client/group-member';
import type { GroupMemberOptions } from '../../../../src/client/group-member-options';
import type { GroupMemberEvents } from '../../../../src/client/group-member-events';
import { ManualTime } from '../../../../src/time';
import { flush, ScriptedTransport } from './scripted-transport';

export type RecordedEvent = {
  [K in keyof GroupMemberEvents]: [K, ...GroupMemberEvents[K]];
}[keyof GroupMemberEvents];

export const BASE_OPTIONS: GroupMemberOptions = {
  groupId: 'g',
  topics: ['t'],
  partitionsPerTopic: new Map([['t', 4]]),
  sessionTimeoutMs: 10_000,
  rebalanceTimeoutMs: 20_000,
  heartbeatIntervalMs: 3_000,
};

/** A member on a ManualTime and a ScriptedTransport, with every event it emits recorded in order. */
export function harness(options: Partial<GroupMemberOptions> = {}, transport = new ScriptedTransport()) {
  const time = new ManualTime();
  const member = new GroupMember({ ...BASE_OPTIONS, ...options }, { transport, time, random: () => 0.5 });
  const events: RecordedEvent[] = [];
  for (const name of ['assigned', 'revoked', 'lost', 'error', 'closed'] as const) {
    member.on(name, (...args: unknown[]) => events.push([name, ...args] as RecordedEvent));
  }
  /**
   * Moves the clock by `ms` and lets the member react to whatever that caused. ManualTime runs every timer
   * that fell due at the END time, before any answer can arrive, so a jump longer than the session timeout
   * expires the session even though heartbeats "were sent": step in pieces shorter than that.
   */
  const advance = async (ms: number): Promise<void> => {
    time.advance(ms);
    await flush();
  };
  const names = (): string[] => events.map((e) => e[0]);
  return { member, transport, time, events, names, advance };
}

/** A harness whose member has joined and synced (generation 1, leader of itself). */
export async function joined(options: Partial<GroupMemberOptions> = {}, transport = new ScriptedTransport()) {
  const h = harness(options, transport);
  await flush();
  if (h.member.state !== 'stable') throw new Error(`member did not join: ${h.member.state}`);
  return h;
}

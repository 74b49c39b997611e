import { ErrorCode } from '../../src/errors';
import { RoundSet } from '../support/round-set';
import { startBareKafkaServer } from './bare-kafka-process';
import {
  closeConnections,
  openConnections,
  responseErrorCodeAt,
  type KafkaFrameConnection,
} from './kafka-frames';
import { formKafkaGroups, heartbeatFrame } from './kafka-group-driver';
import { startKafkaBenchServer } from './server-process';

/**
 * Idle memory per member on the Kafka door (issue 31 §3): what one member's own connection, idle after a
 * heartbeat, adds to the server, beside the same connections held by a bare Node `net` server (the floor).
 *
 * Each round, on a fresh cohort server child, MEMORY_MEMBERS members are formed over the Kafka door in
 * groups of 10 (on a pool of formation connections, closed after), and the server's memory is read after
 * full collections: the members themselves are in that reading. Then every member opens a connection of
 * its own, as a Kafka consumer holds one to its coordinator, and heartbeats once on it (every answer must
 * be NONE); the memory is read again. Bytes per member = (after − before) ÷ members, for V8's heap, RSS and
 * external memory: Node's Socket, the door's KafkaConnection and its request context, and what one served
 * request left behind.
 *
 * The floor, in the same round: bench/kafka/bare-kafka-child.ts in a process of its own. It first serves
 * and closes a pool of connections as the formation did on cohort's side (so neither reading is of a cold
 * process), is read, then takes the same MEMORY_MEMBERS connections each answering one Heartbeat, and is
 * read again. Its heap per connection is the least any Kafka server on Node's `net` holds for an idle
 * client; the goal is cohort ≤ 1.25 × that.
 */

export const MEMORY_MEMBERS = 10_000;
const GROUP_SIZE = 10;
const FORMING_GROUPS_AT_ONCE = 100;

async function heartbeatOnEach(
  connections: readonly KafkaFrameConnection[],
  frames: readonly Buffer[],
): Promise<void> {
  const answers = await Promise.all(connections.map((c, i) => c.request(frames[i % frames.length]!)));
  for (const frame of answers) {
    const code = responseErrorCodeAt(frame);
    if (code !== ErrorCode.NONE) throw new Error(`an idle member's Heartbeat answered ${ErrorCode[code]}`);
  }
}

export async function connectionMemory(rounds: number, log: (text: string) => void): Promise<RoundSet> {
  const set = new RoundSet();
  for (let r = 0; r < rounds; r++) {
    let failure: Error | undefined;
    const onFailure = (error: Error): void => {
      failure ??= error;
    };
    const per = (after: number, before: number): number => (after - before) / MEMORY_MEMBERS;

    const server = await startKafkaBenchServer({ initialDelayMs: 500 });
    let frames: Buffer[];
    try {
      const pool = await openConnections(
        '127.0.0.1',
        server.kafkaPort,
        FORMING_GROUPS_AT_ONCE * GROUP_SIZE,
        onFailure,
      );
      const groups = await formKafkaGroups(pool, 'kafka-memory', MEMORY_MEMBERS / GROUP_SIZE, GROUP_SIZE);
      await closeConnections(pool);
      frames = groups.flatMap((g) => g.memberIds.map((id) => heartbeatFrame(g.groupId, g.generationId, id)));
      const before = await server.memory();
      const members = await openConnections('127.0.0.1', server.kafkaPort, MEMORY_MEMBERS, onFailure);
      await heartbeatOnEach(members, frames);
      const after = await server.memory();
      if (failure !== undefined) throw failure;
      set.record('heapBytesPerMember', per(after.heapUsedBytes, before.heapUsedBytes));
      set.record('rssBytesPerMember', per(after.rssBytes, before.rssBytes));
      set.record('externalBytesPerMember', per(after.externalBytes, before.externalBytes));
      await closeConnections(members);
    } finally {
      await server.stop();
    }

    const bare = await startBareKafkaServer();
    try {
      const pool = await openConnections(
        '127.0.0.1',
        bare.port,
        FORMING_GROUPS_AT_ONCE * GROUP_SIZE,
        onFailure,
      );
      await heartbeatOnEach(pool, frames);
      await closeConnections(pool);
      const before = await bare.memory();
      const members = await openConnections('127.0.0.1', bare.port, MEMORY_MEMBERS, onFailure);
      await heartbeatOnEach(members, frames);
      const after = await bare.memory();
      if (failure !== undefined) throw failure;
      if ((await bare.connections()) !== MEMORY_MEMBERS) throw new Error('the bare server lost connections');
      set.record('bareHeapBytesPerMember', per(after.heapUsedBytes, before.heapUsedBytes));
      set.record('bareRssBytesPerMember', per(after.rssBytes, before.rssBytes));
      set.record('bareExternalBytesPerMember', per(after.externalBytes, before.externalBytes));
      await closeConnections(members);
    } finally {
      await bare.stop();
    }
    const v = (name: string): number => Math.round(set.values(name)[r]!);
    log(
      `  round ${r + 1}: heap per member ${v('heapBytesPerMember')} B (bare ${v('bareHeapBytesPerMember')} B), ` +
        `RSS ${v('rssBytesPerMember')} B (bare ${v('bareRssBytesPerMember')} B)`,
    );
  }
  return set;
}

import { ErrorCode } from '../../src/errors';
import { codecs } from '../group/group-driver';
import { RawHttp2Channels } from '../group/raw-http2-channels';
import { RoundSet } from '../support/round-set';
import { ClosedLoopDriver, measureWindow } from './closed-loop-driver';
import { closeConnections, openConnections, responseErrorCodeAt } from './kafka-frames';
import { formKafkaGroups, heartbeatFrame } from './kafka-group-driver';
import { startKafkaBenchServer } from './server-process';

/**
 * Server CPU per Heartbeat over the Kafka door against a unary gRPC Heartbeat (issue 31 §3): the same
 * members of the same server, in the same rounds, each side driven by a cheap client.
 *
 * One whole cohort server (bench/kafka/server-child.ts) in a child process. 1,000 groups of 10 members are
 * formed over the Kafka door (bench/kafka/kafka-group-driver.ts, a connection per forming member, 30-minute
 * sessions); the formation's connections are then closed. Both sides heartbeat those 10,000 members in
 * one fixed order with IN_FLIGHT heartbeats outstanding, each answer sending the next:
 * - `kafka`: Heartbeat v3 frames encoded once before the rounds, on KAFKA_CONNECTIONS connections of the
 *   bench's raw Kafka client (bench/kafka/kafka-frames.ts: no codec on the hot path, the answer's error
 *   code read in place). The door serves a connection's requests one after another, so a connection holds
 *   IN_FLIGHT ÷ KAFKA_CONNECTIONS pipelined requests.
 * - `grpc`: unary Heartbeat calls, requests encoded once, on GRPC_CONNECTIONS connections of bench:group's
 *   raw HTTP/2 client (bench/group/raw-http2-channels.ts), as bench:group's heartbeat-stream section does.
 * Each side runs a warm-up, then a window in which the server measures its own CPU (process.cpuUsage of
 * the server process) and the client counts the heartbeats answered; the side that goes first alternates.
 * Per round: server CPU µs per heartbeat (kafka ÷ grpc is the goal's ratio), heartbeats per server
 * core-second (its reciprocal as a rate), heartbeats per second and event-loop utilisation. Every answer
 * must be NONE.
 */

export const HEARTBEAT_GROUPS = 1_000;
export const HEARTBEAT_GROUP_SIZE = 10;
const FORMING_GROUPS_AT_ONCE = 100;
const KAFKA_CONNECTIONS = 8;
const GRPC_CONNECTIONS = 4;
const IN_FLIGHT = 256;

export interface HeartbeatCostShape {
  readonly rounds: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  readonly cpuProfileDir?: string;
}

type Side = 'kafka' | 'grpc';

export async function heartbeatCost(
  shape: HeartbeatCostShape,
  log: (text: string) => void,
): Promise<RoundSet> {
  const server = await startKafkaBenchServer({ initialDelayMs: 500, cpuProfileDir: shape.cpuProfileDir });
  let failure: Error | undefined;
  const onFailure = (error: Error): void => {
    failure ??= error;
  };
  const channels = new RawHttp2Channels(server.grpcTarget, GRPC_CONNECTIONS);
  const heartbeaters = await openConnections('127.0.0.1', server.kafkaPort, KAFKA_CONNECTIONS, onFailure);
  try {
    const t0 = Date.now();
    const pool = await openConnections(
      '127.0.0.1',
      server.kafkaPort,
      FORMING_GROUPS_AT_ONCE * HEARTBEAT_GROUP_SIZE,
      onFailure,
    );
    const groups = await formKafkaGroups(pool, 'kafka-heartbeat', HEARTBEAT_GROUPS, HEARTBEAT_GROUP_SIZE);
    await closeConnections(pool);
    const members = groups.flatMap((g) => g.memberIds.map((memberId) => ({ group: g, memberId })));
    log(
      `formed ${groups.length} groups of ${HEARTBEAT_GROUP_SIZE} over the Kafka door in ${Date.now() - t0} ms`,
    );

    const kafkaFrames = members.map((m) => heartbeatFrame(m.group.groupId, m.group.generationId, m.memberId));
    const c = codecs();
    const grpcRequests = members.map((m) =>
      c.heartbeat.encodeRequest({
        groupId: m.group.groupId,
        generationId: m.group.generationId,
        memberId: m.memberId,
        groupInstanceId: '',
      }),
    );
    const kafka: ClosedLoopDriver = new ClosedLoopDriver(
      (member, onAnswer) =>
        heartbeaters[member % KAFKA_CONNECTIONS]!.send(kafkaFrames[member]!, (frame) => {
          const code = responseErrorCodeAt(frame);
          if (code !== ErrorCode.NONE) kafka.fail(new Error(`Kafka Heartbeat answered ${ErrorCode[code]}`));
          onAnswer();
        }),
      members.length,
      IN_FLIGHT,
    );
    const grpc: ClosedLoopDriver = new ClosedLoopDriver(
      (member, onAnswer) => {
        channels.call(member, c.heartbeat.path, grpcRequests[member]!, c.heartbeat.decodeResponse).then(
          (response) => {
            if (response.errorCode !== ErrorCode.NONE) {
              grpc.fail(new Error(`gRPC Heartbeat answered ${ErrorCode[response.errorCode]}`));
            }
            onAnswer();
          },
          (error: Error) => {
            grpc.fail(error);
            onAnswer();
          },
        );
      },
      members.length,
      IN_FLIGHT,
    );

    const rounds = new RoundSet();
    for (let r = 0; r < shape.rounds; r++) {
      const sides: Side[] = r % 2 === 0 ? ['grpc', 'kafka'] : ['kafka', 'grpc'];
      for (const side of sides) {
        const w = await measureWindow(
          server,
          side === 'kafka' ? kafka : grpc,
          shape.warmupMs,
          shape.windowMs,
        );
        if (failure !== undefined) throw failure;
        rounds.record(`${side}CallsPerSec`, w.answered / (w.wallUs / 1e6));
        rounds.record(`${side}CpuUsPerCall`, w.cpuUs / w.answered);
        rounds.record(`${side}CallsPerCoreSec`, w.answered / (w.cpuUs / 1e6));
        rounds.record(`${side}EventLoopUtilization`, w.eventLoopUtilization);
      }
      const v = (name: string): number => rounds.values(name)[r]!;
      log(
        `  round ${r + 1}: gRPC ${Math.round(v('grpcCallsPerSec'))}/s (${v('grpcCpuUsPerCall').toFixed(1)} µs CPU, ` +
          `ELU ${v('grpcEventLoopUtilization').toFixed(2)}), Kafka ${Math.round(v('kafkaCallsPerSec'))}/s ` +
          `(${v('kafkaCpuUsPerCall').toFixed(1)} µs CPU, ELU ${v('kafkaEventLoopUtilization').toFixed(2)}); ` +
          `Kafka ÷ gRPC CPU per heartbeat ${(v('kafkaCpuUsPerCall') / v('grpcCpuUsPerCall')).toFixed(3)}`,
      );
    }
    return rounds;
  } finally {
    channels.close();
    await closeConnections(heartbeaters);
    await server.stop();
  }
}

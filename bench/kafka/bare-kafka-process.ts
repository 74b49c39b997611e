import { join } from 'node:path';
import { startChild } from '../group/child-rpc';
import type { CpuWindow, ServerMemory } from './server-child';

/** The parent's handle on bench/kafka/bare-kafka-child.ts, the floor. */
export interface BareKafkaServer {
  readonly pid: number;
  readonly port: number;
  /** The record set a Fetch at `fetchOffset` is answered with. */
  setFetchRecords(fetchOffset: number, records: Buffer): Promise<void>;
  /** Connections open on the server. */
  connections(): Promise<number>;
  windowStart(): Promise<void>;
  windowStop(): Promise<CpuWindow>;
  memory(): Promise<ServerMemory>;
  stop(): Promise<void>;
}

/** `storeDir`: the storing floor, which also writes the produced bytes to a file there (see the child). */
export async function startBareKafkaServer(storeDir?: string): Promise<BareKafkaServer> {
  const child = startChild(join(__dirname, 'bare-kafka-child.ts'), {
    args: storeDir === undefined ? [] : [`--store=${storeDir}`],
  });
  const port = await child.request<number>('port');
  return {
    pid: child.pid,
    port,
    setFetchRecords: (fetchOffset, records) =>
      child.request('setFetchRecords', { fetchOffset, base64: records.toString('base64') }),
    connections: () => child.request('connections'),
    windowStart: () => child.request('windowStart'),
    windowStop: () => child.request('windowStop'),
    memory: () => child.request('memory'),
    stop: () => child.stop(),
  };
}

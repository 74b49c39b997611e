import * as fs from 'node:fs';
import * as path from 'node:path';
import { ErrorCode } from '../../src/errors';
import type { LogLine } from '../support/capture-logger';
import type { CohortProcess } from '../support/spawn-cohort';
import { spawnCohort } from '../support/spawn-cohort';
import type { BrokerClient } from './log-cluster';
import { brokerClient, fetchRequest, produceRequest } from './log-cluster';
import { makeTempDir, removeTempDir } from '../unit/log/storage/temp-dir';

/**
 * A damaged sealed segment in a real data directory: `cohort` refuses to start and says where, starts with
 * --truncate-corrupt-logs, logs and counts what it removed, reuses no offset, and the repair is durable.
 */
describe('a cohort process with a damaged log', () => {
  let dataDir: string;
  let processes: CohortProcess[];
  const clients: BrokerClient[] = [];

  beforeEach(() => {
    dataDir = makeTempDir();
    processes = [];
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    for (const process of processes) await process.kill();
    removeTempDir(dataDir);
  });

  function spawn(extra: readonly string[] = []): CohortProcess {
    const process = spawnCohort([
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      dataDir,
      '--log-segment-bytes',
      '1024',
      ...extra,
    ]);
    processes.push(process);
    return process;
  }

  async function clientOf(process: CohortProcess): Promise<BrokerClient> {
    const listening = await process.waitForLog('cohort listening');
    const client = brokerClient(String(listening.address));
    clients.push(client);
    return client;
  }

  async function stop(process: CohortProcess): Promise<void> {
    process.child.kill('SIGTERM');
    expect((await process.exited).code).toBe(0);
  }

  async function readAll(client: BrokerClient): Promise<number[]> {
    const offsets: number[] = [];
    let next = 0;
    for (;;) {
      const response = await client.fetch(fetchRequest('orders', next));
      const partition = response.responses[0]!.partitions[0]!;
      expect(partition.errorCode).toBe(ErrorCode.NONE);
      if (partition.records.length === 0) return offsets;
      for (const record of partition.records) offsets.push(record.offset);
      next = partition.records.at(-1)!.offset + 1;
    }
  }

  test('refuses to start, naming the file and offset, and starts with --truncate-corrupt-logs', async () => {
    const first = spawn();
    const client = await clientOf(first);
    const created = await client.createTopics({
      topics: [{ name: 'orders', numPartitions: 1, replicationFactor: 1 }],
    });
    expect(created.topics[0]!.errorCode).toBe(ErrorCode.NONE);
    for (let i = 0; i < 40; i++) {
      const produced = await client.produce(produceRequest('orders', [`order ${i}`.padEnd(40, '.')], 1));
      expect(produced.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    }
    await stop(first);

    // The length field of the last batch of the second segment rots (a sealed segment, long fsynced).
    const partitionDir = path.join(dataDir, 'orders-0');
    const logs = fs
      .readdirSync(partitionDir)
      .filter((name) => name.endsWith('.log'))
      .sort();
    expect(logs.length).toBeGreaterThan(3);
    const victimFile = path.join(partitionDir, logs[1]!);
    const victimOffset = Number(logs[2]!.slice(0, 20)) - 1;
    const bytes = fs.readFileSync(victimFile);
    let position = 0;
    let last = 0;
    while (position < bytes.length) {
      last = position;
      position += 12 + bytes.readInt32BE(position + 8);
    }
    bytes[last + 9] = bytes[last + 9]! ^ 0x40;
    fs.writeFileSync(victimFile, bytes);

    const refused = spawn();
    expect((await refused.exited).code).toBe(1);
    const failure = refused.lines.find(
      (line): line is LogLine => typeof line !== 'string' && line.msg === 'cohort could not start',
    );
    const message = String((failure?.err as { message?: string } | undefined)?.message);
    expect(message).toContain(`corrupt data in ${victimFile} at offset ${victimOffset}`);
    expect(message).toContain('--truncate-corrupt-logs');
    expect(fs.readFileSync(victimFile)).toEqual(bytes);

    const repaired = spawn(['--truncate-corrupt-logs']);
    const repairedClient = await clientOf(repaired);
    const removed = await repaired.waitForLog('damaged data below the recovery point was removed from a log');
    expect(removed).toMatchObject({ level: 50, kind: 'corrupt', file: victimFile, offset: victimOffset });
    expect(await readAll(repairedClient)).toEqual(
      Array.from({ length: 40 }, (_, i) => i).filter((offset) => offset !== victimOffset),
    );
    const next = await repairedClient.produce(produceRequest('orders', ['after the repair'], 1));
    expect(next.topics[0]!.partitions[0]!.baseOffset).toBe(40);
    const listening = await repaired.waitForLog('cohort listening');
    const metrics = await (await fetch(`http://${String(listening.adminAddress)}/metrics`)).text();
    expect(metrics).toMatch(/^cohort_log_recovery_truncations_total\{kind="corrupt"\} 1$/m);
    await stop(repaired);

    // The repair is durable: the next start needs no flag and finds nothing to cut.
    const again = spawn();
    const againClient = await clientOf(again);
    expect((await readAll(againClient)).at(-1)).toBe(40);
    expect(
      again.lines.some((line) => typeof line !== 'string' && String(line.msg).includes('removed from a log')),
    ).toBe(false);
    await stop(again);
  }, 120_000);
});

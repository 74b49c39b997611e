import * as fs from 'node:fs';
import * as path from 'node:path';
import { createConfig } from '../../src/config';
import { ErrorCode } from '../../src/errors';
import { CONSUMER_OFFSETS_PARTITION_DIR } from '../../src/log/consumer-offsets';
import { type CohortServer, createServer } from '../../src/server/create-server';
import { ManualTime } from '../../src/time';
import { captureLogger } from '../support/capture-logger';
import { LocalOffsetsTopic } from '../unit/log/consumer-offsets/local-offsets-topic';
import { makeTempDir, removeTempDir } from '../unit/log/storage/temp-dir';

const offset = (committedOffset: number) => ({
  committedOffset,
  committedLeaderEpoch: -1,
  metadata: '',
  commitTimestampMs: 1_000,
});

/**
 * A server whose `__consumer_offsets` holds a batch that fails its CRC: it becomes ready (before, the load
 * failed and every group answered COORDINATOR_NOT_AVAILABLE for good), serves every commit written after
 * the damaged one, and says what it skipped in its log and in /metrics.
 */
describe('a server with a damaged __consumer_offsets', () => {
  let dataDir: string;
  let server: CohortServer | undefined;

  beforeEach(() => {
    dataDir = makeTempDir();
  });

  afterEach(async () => {
    await server?.close();
    server = undefined;
    removeTempDir(dataDir);
  });

  it('loads every other commit, logs the skipped bytes at error and counts them', async () => {
    const dir = path.join(dataDir, CONSUMER_OFFSETS_PARTITION_DIR);
    const topic = new LocalOffsetsTopic(dataDir, { time: new ManualTime() });
    const store = topic.store(0);
    await store.load();
    await store.commit('g1', [{ topic: 't', partition: 0, offset: offset(1) }]);
    await store.commit('g1', [{ topic: 't', partition: 1, offset: offset(2) }]);
    await store.commit('g1', [{ topic: 't', partition: 0, offset: offset(3) }]);
    await store.commit('g2', [{ topic: 'u', partition: 0, offset: offset(7) }]);
    const [first, victim] = topic.writer(0).log.read(0, 1 << 20).batches;
    await topic.close();
    // A byte of the victim's record value: only its CRC can tell.
    const file = path.join(dir, '00000000000000000000.log');
    const bytes = fs.readFileSync(file);
    const at = first!.sizeInBytes + victim!.sizeInBytes - 3;
    bytes[at] = bytes[at]! ^ 0x5a;
    fs.writeFileSync(file, bytes);

    const { logger, lines } = captureLogger('info');
    server = createServer(createConfig({ dataDir, listen: '127.0.0.1:0', adminListen: 'off' }), { logger });
    await server.start();
    await server.ready();

    const context = { clientHost: '127.0.0.1' };
    const g1 = await server.coordinator.offsetFetch(
      { groupId: 'g1', topics: [], requireStable: false },
      context,
    );
    expect(g1.errorCode).toBe(ErrorCode.NONE);
    const committed = new Map(
      g1.topics.flatMap((topic) =>
        topic.partitions.map((p) => [`${topic.name}-${p.partitionIndex}`, p.committedOffset]),
      ),
    );
    expect(committed).toEqual(new Map([['t-0', 3]]));
    const g2 = await server.coordinator.offsetFetch(
      { groupId: 'g2', topics: [], requireStable: false },
      context,
    );
    expect(g2.topics[0]!.partitions[0]!.committedOffset).toBe(7);

    const skipped = lines.filter((line) =>
      String(line.msg).startsWith('the __consumer_offsets load skipped'),
    );
    expect(skipped).toEqual([
      expect.objectContaining({
        level: 50,
        file,
        position: first!.sizeInBytes,
        sizeInBytes: victim!.sizeInBytes,
        offset: 1,
      }),
    ]);
    expect(await server.metrics.scrape()).toMatch(
      /^cohort_consumer_offsets_corrupt_records_total\{kind="batch"\} 1$/m,
    );
  });
});

import * as fs from 'node:fs';
import * as path from 'node:path';
import { ErrorCode } from '../../src/errors';
import { writeRecoveryCheckpointSync } from '../../src/log/storage/recovery-checkpoint';
import { awaitIsr, eventually, LogCluster, produceRequest, TEST_REPLICA_LAG_MS } from './log-cluster';

/**
 * A follower whose log lost its tail in a crash (fixed-role replication, `--replica-of`) cuts the torn
 * bytes when it restarts, says so, and fetches what it cut from its leader again, from its new log end
 * offset, as it always does: nothing else is needed for a cut at the end of the log.
 */
describe('a follower that cut a torn tail', () => {
  let cluster: LogCluster;

  beforeEach(() => {
    cluster = new LogCluster();
  });

  afterEach(async () => {
    await cluster.cleanup();
  });

  it('fetches the cut records from its leader again and ends with the same log', async () => {
    const leader = await cluster.start('leader', {
      nodeId: 0,
      followers: [1],
      replicaLagTimeMaxMs: TEST_REPLICA_LAG_MS,
    });
    const followerConfig = { nodeId: 1, replicaOf: leader.target, replicaLagTimeMaxMs: TEST_REPLICA_LAG_MS };
    await cluster.start('follower', followerConfig);
    const created = await leader.client.createTopics({
      topics: [{ name: 't', numPartitions: 1, replicationFactor: 2 }],
    });
    expect(created.topics[0]!.errorCode).toBe(ErrorCode.NONE);
    await awaitIsr(leader.client, 't', [0, 1]);
    for (let i = 0; i < 10; i++) {
      const produced = await leader.client.produce(produceRequest('t', [`record ${i}`], -1));
      expect(produced.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    }
    await cluster.stop('follower');

    // What a crash of the follower's machine leaves: only offsets below 6 were fsynced, and the file
    // ends in the middle of a later batch.
    const partitionDir = path.join(cluster.dataDir('follower'), 't-0');
    const file = path.join(partitionDir, '00000000000000000000.log');
    writeRecoveryCheckpointSync(partitionDir, { recoveryPoint: 6, isCleanShutdown: false });
    fs.truncateSync(file, fs.statSync(file).size - 30);

    const follower = await cluster.start('follower', followerConfig);
    const cut = follower.logs.find((line) => line.msg === 'a torn tail left by a crash was cut from a log');
    expect(cut).toMatchObject({ kind: 'torn_tail', file, offset: 9 });
    const followerLog = () => follower.server.replicaManager.getPartition('t-0')!.log;
    await eventually(() => (followerLog().logEndOffset === 10 ? true : undefined), 'the follower to refetch');
    const leaderLog = leader.server.replicaManager.getPartition('t-0')!.log;
    const valuesOf = (log: typeof leaderLog) =>
      log.read(0, 1 << 20).records.map((record) => [record.offset, record.value!.toString()]);
    expect(valuesOf(followerLog())).toEqual(valuesOf(leaderLog));
  });
});

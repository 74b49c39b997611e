import { ErrorCode } from '../../../src/errors';
import { groupEventLog } from '../../../src/server/group-event-log';
import { ManualTime } from '../../../src/time';
import { captureLogger } from '../../support/capture-logger';

const INFO = 30;
const DEBUG = 20;

describe('groupEventLog', () => {
  it("logs a rebalance's start and completion at info with the group bound, and how long it took", () => {
    const time = new ManualTime();
    const { logger, lines } = captureLogger('info');
    const log = groupEventLog(logger, time);
    log.onPrepareRebalance?.('orders', 4, 'member-left', 'm-2');
    log.onStateChange?.('orders', 'Stable', 'PreparingRebalance', 4);
    time.advance(250);
    log.onStateChange?.('orders', 'PreparingRebalance', 'CompletingRebalance', 5);
    log.onStateChange?.('orders', 'CompletingRebalance', 'Stable', 5);
    expect(lines).toEqual([
      expect.objectContaining({
        level: INFO,
        groupId: 'orders',
        msg: 'rebalance started',
        reason: 'member-left',
        memberId: 'm-2',
        generationId: 4,
      }),
      expect.objectContaining({
        level: INFO,
        groupId: 'orders',
        msg: 'rebalance completed',
        generationId: 5,
        durationMs: 250,
        state: 'Stable',
      }),
    ]);
  });

  it('logs session expiries at info, and state changes and fenced requests only at debug', () => {
    const { logger, lines } = captureLogger('debug');
    const log = groupEventLog(logger, new ManualTime());
    log.onMemberExpired?.('g', 'm-1', 'instance-1');
    log.onFenced?.('g', 'm-old', 'instance-1', ErrorCode.FENCED_INSTANCE_ID);
    log.onStateChange?.('g', 'Stable', 'PreparingRebalance', 3);
    expect(lines.map(({ level, msg, groupId }) => ({ level, msg, groupId }))).toEqual([
      { level: INFO, msg: 'member session expired', groupId: 'g' },
      { level: DEBUG, msg: 'request fenced', groupId: 'g' },
      { level: DEBUG, msg: 'group state changed', groupId: 'g' },
    ]);
    expect(lines[1]).toMatchObject({ memberId: 'm-old', errorCode: 'FENCED_INSTANCE_ID' });
    expect(lines[2]).toMatchObject({ from: 'Stable', to: 'PreparingRebalance' });
  });

  it('logs expired offsets at info and a failed removal at warn', () => {
    const { logger, lines } = captureLogger('info');
    const log = groupEventLog(logger, new ManualTime());
    log.onOffsetsExpired?.('old', 3, true);
    log.onOffsetsExpired?.('standalone', 1, false);
    log.onOffsetExpiryFailed?.('old', new Error('disk full'));
    expect(lines).toEqual([
      expect.objectContaining({ level: INFO, groupId: 'old', msg: 'group expired', partitions: 3 }),
      expect.objectContaining({ level: INFO, groupId: 'standalone', msg: 'offsets expired', partitions: 1 }),
      expect.objectContaining({ level: 40, groupId: 'old', msg: 'expired offsets could not be removed' }),
    ]);
    expect(lines[2]).toMatchObject({ err: { message: 'disk full' } });
  });

  it("logs a retention check's totals at info when it removed something, else only at debug", () => {
    const { logger, lines } = captureLogger('info');
    const log = groupEventLog(logger, new ManualTime());
    const idle = {
      groupsChecked: 5,
      offsetsListed: 0,
      offsetsExpired: 0,
      groupsExpired: 0,
      turns: 1,
      durationMs: 0,
    };
    log.onOffsetRetentionCheckCompleted?.(idle);
    log.onOffsetRetentionCheckCompleted?.({ ...idle, offsetsListed: 9, offsetsExpired: 4, groupsExpired: 1 });
    expect(lines).toEqual([
      expect.objectContaining({
        level: INFO,
        msg: 'offset retention check completed',
        offsetsExpired: 4,
        groupsExpired: 1,
      }),
    ]);
  });

  it('writes nothing for fenced requests at info', () => {
    const { logger, lines } = captureLogger('info');
    groupEventLog(logger, new ManualTime()).onFenced?.('g', 'm', '', ErrorCode.ILLEGAL_GENERATION);
    expect(lines).toEqual([]);
  });

  it('logs offsets partitions loaded and unloaded at info when they hold groups, a failed load at error', () => {
    const { logger, lines } = captureLogger('info');
    const log = groupEventLog(logger, new ManualTime());
    log.onShardLoaded?.(7, 3, 0, 2);
    log.onShardLoaded?.(8, 3, 12, 840);
    log.onShardUnloaded?.(7, 3, 0);
    log.onShardUnloaded?.(8, 3, 12);
    log.onShardLoadFailed?.(9, 1, new Error('disk'));
    log.onStaleLeadership?.(9, 0, 1);
    expect(lines).toEqual([
      expect.objectContaining({
        level: INFO,
        msg: 'offsets partition loaded',
        partition: 8,
        leaderEpoch: 3,
        groups: 12,
        durationMs: 840,
      }),
      expect.objectContaining({ level: INFO, msg: 'offsets partition unloaded', partition: 8, groups: 12 }),
      expect.objectContaining({
        level: 50,
        msg: 'offsets partition failed to load',
        partition: 9,
        err: expect.objectContaining({ message: 'disk' }),
      }),
    ]);
  });
});

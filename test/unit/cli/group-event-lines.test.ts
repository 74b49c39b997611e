import { EventEmitter } from 'node:events';
import { writeGroupEvents, type GroupEventSource } from '../../../src/cli/group-event-lines';

const tp = (topic: string, ...partitions: number[]) => partitions.map((partition) => ({ topic, partition }));

describe('writeGroupEvents', () => {
  it('prints a join, a revocation, a new assignment and a loss in the words of npm run demo', () => {
    const consumer = new EventEmitter();
    const lines: string[] = [];
    writeGroupEvents(consumer as unknown as GroupEventSource, 'p: ', (line) => lines.push(line));
    const assigned = { memberId: 'm', leaderId: 'm', protocolName: 'range', userData: null };
    consumer.emit('assigned', {
      ...assigned,
      generationId: 1,
      isLeader: true,
      partitions: tp('demo', 0, 3),
      added: tp('demo', 0, 3),
    });
    consumer.emit('revoked', {
      generationId: 1,
      reason: 'rebalance',
      partitions: [],
      waitUntil: () => undefined,
    });
    consumer.emit('revoked', {
      generationId: 1,
      reason: 'reassigned',
      partitions: tp('demo', 3),
      waitUntil: () => undefined,
    });
    consumer.emit('assigned', {
      ...assigned,
      generationId: 2,
      isLeader: false,
      partitions: [...tp('demo', 0, 2), ...tp('other', 1)],
      added: tp('demo', 2),
    });
    consumer.emit('lost', { generationId: 2, reason: 'session-expired', partitions: tp('demo', 0, 2) });
    expect(lines).toEqual([
      'p: joined generation 1 as leader: owns demo [0, 3]\n',
      'p: gives up demo [3] (reassigned), committing first\n',
      'p: assigned in generation 2: owns demo [0, 2]  other [1] (new: demo [2])\n',
      'p: lost demo [0, 2] (session-expired)\n',
    ]);
  });
});

import { loadCohortProtos } from '../../../src/server';
import { guardServiceDefinition, UndecodableRequest } from '../../../src/server/undecodable-request';

describe('guardServiceDefinition', () => {
  const original = loadCohortProtos().groupCoordinator;

  it('decodes well-formed bytes as the original definition does', () => {
    const guarded = guardServiceDefinition(original, () => undefined);
    const bytes = original.Heartbeat.requestSerialize({ groupId: 'g', generationId: 3, memberId: 'm' });
    expect(guarded.Heartbeat.requestDeserialize(bytes)).toEqual(original.Heartbeat.requestDeserialize(bytes));
    expect(guarded.Heartbeat.path).toBe('/cohort.v1.GroupCoordinator/Heartbeat');
  });

  it('returns an UndecodableRequest instead of throwing for malformed bytes', () => {
    const guarded = guardServiceDefinition(original, () => undefined);
    // Field 1 (group_id) whose length varint is cut off.
    const decoded = guarded.Heartbeat.requestDeserialize(Buffer.from([0x0a, 0xff]));
    expect(decoded).toBeInstanceOf(UndecodableRequest);
  });

  it('reports a response that cannot be encoded and rethrows without its text', () => {
    const reported: [unknown, string][] = [];
    const guarded = guardServiceDefinition(original, (error, method) => reported.push([error, method]));
    const notAResponse = { members: 'not a list' };
    // LeaveGroup keeps the generic encoder, which checks types (group-wire.ts's encoders do not).
    expect(() => guarded.LeaveGroup.responseSerialize(notAResponse as never)).toThrow(
      new Error('response could not be encoded'),
    );
    expect(reported).toHaveLength(1);
    expect(reported[0][1]).toBe('/cohort.v1.GroupCoordinator/LeaveGroup');
    expect(String(reported[0][0])).toContain('members');
  });
});

import { RANGE_ASSIGNOR } from '../../../src/client/assignors';
import { GROUP_MEMBER_DEFAULTS, resolveGroupMemberOptions } from '../../../src/client/group-member-options';

describe('resolveGroupMemberOptions', () => {
  it("fills in Kafka's consumer defaults and cooperative-sticky", () => {
    const resolved = resolveGroupMemberOptions({ groupId: 'g', topics: [] });
    expect(resolved).toMatchObject({ ...GROUP_MEMBER_DEFAULTS, protocolType: 'consumer', clientId: '' });
    expect(resolved.protocols.map((p) => p.name)).toEqual(['cooperative-sticky']);
    expect(Object.isFrozen(resolved)).toBe(true);
  });

  it('reports every problem at once, each saying what to change', () => {
    let message = '';
    try {
      resolveGroupMemberOptions({
        groupId: '',
        topics: ['a', 'a'],
        groupInstanceId: '',
        protocols: [RANGE_ASSIGNOR, RANGE_ASSIGNOR],
        sessionTimeoutMs: 3_000,
        heartbeatIntervalMs: 3_000,
        retryBackoffMs: 500,
        retryBackoffMaxMs: 100,
        maxProcessingIntervalMs: 0,
      });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('groupId must be a non-empty string');
    expect(message).toContain('groupInstanceId must be a non-empty string');
    expect(message).toContain('topics lists a topic twice');
    expect(message).toContain('protocols lists "range" twice');
    expect(message).toContain('heartbeatIntervalMs (3000) must be lower than sessionTimeoutMs (3000)');
    expect(message).toContain('retryBackoffMaxMs (100) must not be lower than retryBackoffMs (500)');
    expect(message).toContain('maxProcessingIntervalMs must be a whole number');
    expect(message).toContain('partitionsPerTopic is required');
  });

  it('heartbeats over a stream unless heartbeatOverStream is false, and rejects a non-boolean', () => {
    expect(resolveGroupMemberOptions({ groupId: 'g', topics: [] }).heartbeatOverStream).toBe(true);
    const off = resolveGroupMemberOptions({ groupId: 'g', topics: [], heartbeatOverStream: false });
    expect(off.heartbeatOverStream).toBe(false);
    expect(() =>
      resolveGroupMemberOptions({
        groupId: 'g',
        topics: [],
        heartbeatOverStream: 'no' as unknown as boolean,
      }),
    ).toThrow('heartbeatOverStream must be true or false, got no');
  });

  it('accepts a member without topics and without partition counts', () => {
    expect(() => resolveGroupMemberOptions({ groupId: 'g', topics: [] })).not.toThrow();
  });
});

import { CohortClient } from '../../../src/client/cohort-client';
import { bootstrapAddresses, nodeAddress } from '../../../src/client/node-address';
import { PartitionLeaders } from '../../../src/client/partition-leaders';
import { ErrorCode } from '../../../src/errors';
import { ManualTime } from '../../../src/time';

describe('node addresses', () => {
  it('dials a node at its advertised host:port, a wildcard host at the host it was learnt from', () => {
    expect(nodeAddress('10.0.0.2', 7070, '10.0.0.1:7070')).toBe('10.0.0.2:7070');
    expect(nodeAddress('0.0.0.0', 7080, 'cohort-1:7070')).toBe('cohort-1:7080');
    expect(nodeAddress('::', 7080, '[::1]:7070')).toBe('[::1]:7080');
    expect(nodeAddress('fd00::2', 7070, 'a:1')).toBe('[fd00::2]:7070');
  });

  it('reaches a one-node Metadata where it reached it, and a cluster at the advertised addresses', () => {
    const leaders = new PartitionLeaders(new ManualTime());
    const partition = { replicaNodes: [0], isrNodes: [0], errorCode: ErrorCode.NONE, leaderEpoch: 0 };
    leaders.update(
      {
        controllerId: -1,
        brokers: [{ nodeId: 0, host: '0.0.0.0', port: 7070 }],
        topics: [
          {
            name: 't',
            errorCode: ErrorCode.NONE,
            partitions: [{ ...partition, partitionIndex: 0, leaderId: 0 }],
            errorMessage: '',
          },
        ],
      },
      'localhost:17070',
    );
    expect(leaders.addressOf(0)).toBe('localhost:17070');
    leaders.update(
      {
        controllerId: -1,
        brokers: [
          { nodeId: 1, host: 'n1', port: 7070 },
          { nodeId: 2, host: 'n2', port: 7070 },
        ],
        topics: [],
      },
      'n1:7070',
    );
    expect(leaders.knownAddresses()).toEqual(['localhost:17070', 'n1:7070', 'n2:7070']);
    // A cluster's node that sees only one live node is not taken for a one-node cohort.
    leaders.update(
      { brokers: [{ nodeId: 2, host: 'n2', port: 7070 }], topics: [], controllerId: 2 },
      'n1:7070',
    );
    expect(leaders.addressOf(2)).toBe('n2:7070');
  });

  it('takes a bootstrap list or one address, not both, and not nothing', () => {
    expect(bootstrapAddresses({ address: 'a:1' })).toEqual(['a:1']);
    expect(bootstrapAddresses({ bootstrap: ['a:1', 'b:2', 'a:1'] })).toEqual(['a:1', 'b:2']);
    expect(() => bootstrapAddresses({})).toThrow(RangeError);
    expect(() => bootstrapAddresses({ bootstrap: [] })).toThrow(/at least one/);
    expect(() => bootstrapAddresses({ address: 'a:1', bootstrap: ['b:2'] })).toThrow(
      /either address or bootstrap/,
    );
    expect(() => new CohortClient({ clientId: 'x', bootstrap: [''] })).toThrow(RangeError);
  });
});

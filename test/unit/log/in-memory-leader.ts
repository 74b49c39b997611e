import type { LeaderEndpoint, ReplicaManager } from '../../../src/log';
import { cancelOn } from '../../support/cancel-on';

/**
 * A leader reached through direct calls: what the gRPC transport does, minus the network. With
 * `authenticatedNodeId`, every call carries it, as the server sets it for a follower that proved its node
 * id; `isDown` makes every call fail as an unreachable leader does, answers to calls already sent
 * included (the leader handled them; the follower never hears back).
 */
export class InMemoryLeader implements LeaderEndpoint {
  failuresLeft = 0;
  calls = 0;
  isClosed = false;
  isDown = false;
  /** The fetch offset of the first partition of every Fetch sent, in order. */
  readonly fetchOffsets: number[] = [];

  constructor(
    private readonly leader: ReplicaManager,
    private readonly authenticatedNodeId?: number,
  ) {}

  fetch: LeaderEndpoint['fetch'] = (request, signal) => {
    const first = request.topics[0]?.partitions[0];
    if (first !== undefined) this.fetchOffsets.push(first.fetchOffset);
    return this.call(() =>
      this.leader.fetch(request, { ...cancelOn(signal), authenticatedNodeId: this.authenticatedNodeId }),
    );
  };
  offsetForLeaderEpoch: LeaderEndpoint['offsetForLeaderEpoch'] = (request) =>
    this.call(() =>
      this.leader.offsetForLeaderEpoch(request, { authenticatedNodeId: this.authenticatedNodeId }),
    );

  close(): void {
    this.isClosed = true;
  }

  private call<T>(send: () => Promise<T>): Promise<T> {
    this.calls++;
    if (this.isDown) return Promise.reject(new Error('connection refused'));
    if (this.failuresLeft > 0) {
      this.failuresLeft--;
      return Promise.reject(new Error('connection refused'));
    }
    return send().then((response) => (this.isDown ? Promise.reject(new Error('connection lost')) : response));
  }
}

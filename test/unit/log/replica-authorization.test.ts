import { ErrorCode } from '../../../src/errors';
import { CONSUMER_REPLICA_ID } from '../../../src/log';
import { replicaAuthorizationError } from '../../../src/log/replica-authorization';

describe('replicaAuthorizationError', () => {
  it('lets the node that proved to be the replica fetch as it', () => {
    expect(replicaAuthorizationError(1, { authenticatedNodeId: 1 }, true)).toBe(ErrorCode.NONE);
    expect(replicaAuthorizationError(0, { authenticatedNodeId: 0 }, true)).toBe(ErrorCode.NONE);
  });

  it('refuses a client, or another node, that names a replica', () => {
    expect(replicaAuthorizationError(1, {}, true)).toBe(ErrorCode.CLUSTER_AUTHORIZATION_FAILED);
    expect(replicaAuthorizationError(1, undefined, true)).toBe(ErrorCode.CLUSTER_AUTHORIZATION_FAILED);
    expect(replicaAuthorizationError(1, { authenticatedNodeId: 2 }, true)).toBe(
      ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    );
    expect(replicaAuthorizationError(0, { authenticatedNodeId: 1 }, true)).toBe(
      ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    );
  });

  it('never refuses a consumer, authenticated or not', () => {
    expect(replicaAuthorizationError(CONSUMER_REPLICA_ID, {}, true)).toBe(ErrorCode.NONE);
    expect(replicaAuthorizationError(-2, undefined, true)).toBe(ErrorCode.NONE);
    expect(replicaAuthorizationError(CONSUMER_REPLICA_ID, { authenticatedNodeId: 3 }, true)).toBe(
      ErrorCode.NONE,
    );
  });

  it('lets every replica fetch through when authenticated replicas are not required', () => {
    expect(replicaAuthorizationError(1, {}, false)).toBe(ErrorCode.NONE);
    expect(replicaAuthorizationError(1, { authenticatedNodeId: 2 }, false)).toBe(ErrorCode.NONE);
  });

  it('answers with Kafka’s number for CLUSTER_AUTHORIZATION_FAILED', () => {
    expect(ErrorCode.CLUSTER_AUTHORIZATION_FAILED).toBe(31);
  });
});

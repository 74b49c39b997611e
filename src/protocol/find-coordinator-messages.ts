import type { ErrorCode } from '../errors';

/** Kafka's CoordinatorType.GROUP: the only key type cohort serves. */
export const COORDINATOR_KEY_TYPE_GROUP = 0;

/** Which node coordinates each key (Kafka's FindCoordinator v4, proto/cohort/v1/group_coordinator.proto). */
export interface FindCoordinatorRequest {
  /** 0 = group. */
  keyType: number;
  keys: string[];
}
/** The coordinator of one key: a node, or why there is none (COORDINATOR_NOT_AVAILABLE, ...). */
export interface Coordinator {
  key: string;
  nodeId: number;
  host: string;
  port: number;
  errorCode: ErrorCode;
  errorMessage: string;
}
/** One `Coordinator` per key asked for. */
export interface FindCoordinatorResponse {
  coordinators: Coordinator[];
}

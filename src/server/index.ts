export type { BoundAddress, CohortServer, CoordinatorFactory, CreateServerOptions } from './create-server';
export {
  BROKER_SERVICE,
  createServer,
  DEFAULT_SHUTDOWN_GRACE_MS,
  GROUP_COORDINATOR_SERVICE,
  TEST_CLOCK_SERVICE,
} from './create-server';
export { ERROR_CODE_TRAILER, INTERNAL_ERROR_MESSAGE, statusForError } from './status-for-error';
export { loadCohortProtos, PROTO_DIR, PROTO_FILES, PROTO_LOADER_OPTIONS } from './load-protos';
export type { UnaryCallLike, UnaryMethod } from './unary-handler';
export { unaryHandler } from './unary-handler';
export { brokerService } from './broker-service';
export { BrokerLeaderEndpoint } from './broker-leader-endpoint';

export type {
  BoundAddress,
  CohortServer,
  CoordinatorFactory,
  CreateServerOptions,
  ServerPhase,
} from './create-server';
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
export { BrokerLeaderEndpoint, brokerLeaderEndpointFactory } from './broker-leader-endpoint';
export type { AdminAddress } from './admin-server';
export { AdminServer } from './admin-server';
export {
  AUTHORIZATION_METADATA_KEY,
  BearerTokenCheck,
  bearerTokenInterceptor,
  TOKEN_EXEMPT_SERVICES,
} from './bearer-token-interceptor';
export type { ServerSecurity } from './server-security';
export { loadServerSecurity } from './server-security';
export type { CallObserver, CallObservers } from './unary-handler';
export { ServerMetrics } from './metrics/server-metrics';
export type { MetricsSources, ServerMetricsOptions } from './metrics/server-metrics';

import type { ServerOptions } from '@grpc/grpc-js';

/**
 * grpc-js options every cohort server sets whatever its configuration (bench/group's server uses them too,
 * to measure what runs in production). cohort serves no channelz service, so nobody could read what
 * grpc-js's channelz tracks, and tracking it costs every call a tracker object with four closures and
 * clock reads (measured: 2% fewer bytes allocated over bench:group's rebalance section).
 */
export const GRPC_SERVER_TUNING: Readonly<ServerOptions> = Object.freeze({ 'grpc.enable_channelz': 0 });

import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { Logger } from 'pino';
import { CohortError, ErrorCode } from '../errors';
import type { KafkaCore } from './kafka-broker';
import { PeriodicTask } from '../log';
import type { Time } from '../time';
import { SystemTimer } from '../timer';
import {
  KafkaConnection,
  type KafkaConnectionHost,
  type RefusedFrameReason,
  type ServableRequest,
  type ServedRequest,
} from './kafka-connection';
import { errorResponseFor } from './kafka-error-response';
import {
  kafkaRequestHandlers,
  NO_RESPONSE,
  UnansweredError,
  type KafkaHandler,
} from './kafka-request-handlers';
import { ADVERTISED_API_VERSIONS, API_VERSIONS, PRODUCE } from './protocol/kafka-apis';
import { encodeResponseChunks } from './protocol/kafka-request';

export interface KafkaListenerOptions {
  /** Where to listen: host as written (IPv6 in brackets) and port (0 picks a free one). */
  readonly host: string;
  readonly port: number;
  /** The largest request accepted (socket.request.max.bytes): a larger frame ends its connection. */
  readonly maxRequestBytes: number;
  /**
   * A connection that neither reads nor writes for this long, with no request of its own parked, is
   * ended (connections.max.idle.ms): a client that stalls, even inside a frame, holds nothing for ever.
   */
  readonly connectionsMaxIdleMs: number;
  /** The server's clock: idleness is measured, and swept, on it (a manual clock's advance included). */
  readonly time: Time;
  readonly core: KafkaCore;
  readonly logger: Logger;
  /** Told each time a connection is ended because of what its client sent (a metric). */
  readonly onRefusedConnection?: (reason: RefusedFrameReason) => void;
  /** Told how many connections are open each time one opens or closes (a metric). */
  readonly onOpenConnections?: (open: number) => void;
  /** The observer of one API's requests, by the API's name (`JoinGroup`), asked once per API. */
  readonly observe?: (apiName: string) => KafkaCallObserver;
  /** Record the (client id, api key, version) of every request, for tests (`wireTrace`). Default false. */
  readonly isWireTraced?: boolean;
}

/**
 * Watches the requests of one API, for metrics: `startCall` when a request is served, `endCall` with the
 * ErrorCode it was answered with (the response's top-level error code, NONE without one;
 * UNKNOWN_SERVER_ERROR or a CohortError's code for a failure), or undefined when the client left first.
 */
export interface KafkaCallObserver {
  startCall(): number;
  endCall(startMark: number, errorCode: ErrorCode | undefined): void;
}

/** One request as the wire trace records it. */
export interface WireTraceEntry {
  readonly clientId: string | null;
  readonly apiKey: number;
  readonly apiVersion: number;
}

export interface KafkaBoundAddress {
  readonly host: string;
  readonly port: number;
  /** `HOST:PORT`, what a Kafka client is given as its bootstrap server. */
  readonly address: string;
}

/** How many entries the wire trace keeps (the oldest are dropped). */
const WIRE_TRACE_LIMIT = 10_000;

/**
 * How often idle connections are looked for: a tenth of the limit, at most every 30 s, so a connection is
 * ended between the limit and a tenth more (Kafka checks at each poll; one pass over every connection here).
 */
export function idleSweepPeriodMs(connectionsMaxIdleMs: number): number {
  return Math.max(1, Math.min(Math.ceil(connectionsMaxIdleMs / 10), 30_000));
}

/**
 * The Kafka door's TCP listener: accepts connections, hands each to a KafkaConnection (framing, order,
 * cancellation), and serves each request through the API's handler, mapping a thrown failure once
 * (kafka-error-response.ts). `close()` stops accepting and ends every connection, releasing what they
 * had parked.
 */
export class KafkaListener {
  private readonly server: Server;
  private readonly connections = new Set<KafkaConnection>();
  private readonly handlers: ReadonlyMap<number, KafkaHandler>;
  private readonly trace: WireTraceEntry[] = [];
  private readonly observers = new Map<string, KafkaCallObserver>();
  private bound: KafkaBoundAddress | undefined;
  /** What every connection shares of the listener. */
  private readonly host: KafkaConnectionHost;
  private readonly idleTimer: SystemTimer;
  private idleSweep: PeriodicTask | undefined;

  constructor(private readonly options: KafkaListenerOptions) {
    this.handlers = kafkaRequestHandlers(options.core);
    this.server = createServer((socket) => this.accept(socket));
    this.idleTimer = new SystemTimer({ name: 'kafka-idle-connections', time: options.time });
    this.host = {
      maxRequestBytes: options.maxRequestBytes,
      time: options.time,
      serve: (request, connection) => this.serve(request, connection),
      onRefused: (connection, reason, detail) => {
        this.options.onRefusedConnection?.(reason);
        this.options.logger.debug(
          { reason, detail, peer: connection.clientHost },
          'Kafka connection refused',
        );
      },
      onClosed: (connection) => {
        this.connections.delete(connection);
        this.options.onOpenConnections?.(this.connections.size);
      },
    };
  }

  get address(): KafkaBoundAddress | undefined {
    return this.bound;
  }

  /** Every request served so far (the most recent WIRE_TRACE_LIMIT), when `isWireTraced`. */
  get wireTrace(): readonly WireTraceEntry[] {
    return this.trace;
  }

  start(): Promise<KafkaBoundAddress> {
    const { host, port } = this.options;
    return new Promise((resolve, reject) => {
      const onError = (error: NodeJS.ErrnoException): void =>
        reject(
          new Error(
            `the Kafka listener cannot listen on ${host}:${port}` +
              `${error.code === undefined ? '' : ` (${error.code})`}: set --kafka-listen (COHORT_KAFKA_LISTEN) ` +
              'to a free HOST:PORT, or to off',
            { cause: error },
          ),
        );
      this.server.once('error', onError);
      // Node takes IPv6 hosts without their brackets.
      this.server.listen(port, host.replace(/^\[(.*)\]$/, '$1'), () => {
        this.server.removeListener('error', onError);
        this.server.on('error', (error) =>
          this.options.logger.error({ err: error }, 'Kafka listener failed'),
        );
        const bound = (this.server.address() as AddressInfo).port;
        this.bound = { host, port: bound, address: `${host}:${bound}` };
        const idleMs = this.options.connectionsMaxIdleMs;
        this.idleSweep = new PeriodicTask(this.idleTimer, idleSweepPeriodMs(idleMs), () =>
          this.expireIdleConnections(idleMs),
        ).start();
        resolve(this.bound);
      });
    });
  }

  /** Stops accepting, ends every connection (their parked requests are released). Idempotent. */
  close(): Promise<void> {
    this.idleSweep?.cancel();
    this.idleTimer.shutdown();
    for (const connection of [...this.connections]) connection.destroy();
    if (!this.server.listening) return Promise.resolve();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private accept(socket: Socket): void {
    this.connections.add(new KafkaConnection(socket, this.host));
    this.options.onOpenConnections?.(this.connections.size);
  }

  /** Ends every connection idle for `idleMs` (none of its requests parked). */
  private expireIdleConnections(idleMs: number): void {
    const sinceMs = this.options.time.monotonicMs() - idleMs;
    for (const connection of this.connections) {
      if (connection.isIdleSince(sinceMs)) connection.expireIdle(idleMs);
    }
  }

  private async serve(request: ServableRequest, context: KafkaConnection): Promise<ServedRequest> {
    const { header } = request;
    if (this.options.isWireTraced === true) {
      if (this.trace.length >= WIRE_TRACE_LIMIT) this.trace.shift();
      this.trace.push({ clientId: header.clientId, apiKey: header.apiKey, apiVersion: header.apiVersion });
    }
    if (request.kind === 'unsupportedApiVersions') {
      // KIP-511: answered in v0 with the versions served, so that the client retries with one of them.
      return encodeResponseChunks(API_VERSIONS, 0, header.correlationId, {
        errorCode: ErrorCode.UNSUPPORTED_VERSION,
        apiKeys: ADVERTISED_API_VERSIONS,
      });
    }
    const { schema, body } = request;
    if (request.trailingBytes > 0) {
      this.options.logger.debug(
        {
          apiKey: header.apiKey,
          apiVersion: header.apiVersion,
          clientId: header.clientId,
          bytes: request.trailingBytes,
        },
        `Kafka ${schema.name} request has bytes after its body, ignored`,
      );
    }
    const handler = this.handlers.get(header.apiKey);
    if (handler === undefined) return { close: 'unsupported', detail: `no handler for key ${header.apiKey}` };
    const observer = this.observerOf(schema.name);
    const mark = observer?.startCall() ?? 0;
    try {
      const response = await handler(body, header, context);
      if (context.isCancelled) {
        observer?.endCall(mark, undefined);
        return undefined;
      }
      if (response === NO_RESPONSE) {
        observer?.endCall(mark, ErrorCode.NONE);
        return undefined;
      }
      if (response instanceof UnansweredError) {
        observer?.endCall(mark, response.errorCode);
        return { close: 'acks-zero-error', detail: response.detail };
      }
      const encoded = encodeResponseChunks(schema, header.apiVersion, header.correlationId, response);
      observer?.endCall(
        mark,
        typeof response.errorCode === 'number' ? (response.errorCode as ErrorCode) : ErrorCode.NONE,
      );
      return encoded;
    } catch (error) {
      if (context.isCancelled) {
        observer?.endCall(mark, undefined);
        return undefined;
      }
      observer?.endCall(mark, error instanceof CohortError ? error.code : ErrorCode.UNKNOWN_SERVER_ERROR);
      this.options.logger.error(
        { err: error, apiKey: header.apiKey, apiVersion: header.apiVersion, clientId: header.clientId },
        `Kafka ${schema.name} failed`,
      );
      const answer = errorResponseFor(schema, header.apiVersion, body, error);
      if (answer === undefined) {
        return {
          close: header.apiKey === PRODUCE.apiKey ? 'acks-zero-error' : 'malformed',
          detail: `${schema.name} failed`,
        };
      }
      return encodeResponseChunks(schema, header.apiVersion, header.correlationId, answer);
    }
  }

  private observerOf(apiName: string): KafkaCallObserver | undefined {
    if (this.options.observe === undefined) return undefined;
    let observer = this.observers.get(apiName);
    if (observer === undefined) {
      observer = this.options.observe(apiName);
      this.observers.set(apiName, observer);
    }
    return observer;
  }
}

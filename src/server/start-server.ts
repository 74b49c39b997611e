import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createConfig, type LogLevel } from '../config';
import { createServer, type CohortServer } from './create-server';

/**
 * How to start an embedded cohort server. Everything is optional: `startServer()` gives a server on the
 * system clock with cohort's defaults, logging nothing.
 */
export interface StartServerOptions {
  /**
   * Time on the server moves only when you call `advanceClock` (the handle then has it). Session timeouts,
   * rebalance timeouts and the initial rebalance delay then pass exactly when a test says, never on their
   * own. The members' own timers (heartbeats, deadlines) still run on their clock. Default false.
   *
   * `'running'`: the server's clock follows wall time, so real Kafka clients' long polls (a Fetch's max
   * wait, a JoinGroup parked until the rebalance ends) end on time, and `advanceClock` jumps it ahead, e.g.
   * to expire a stopped member's session at once.
   */
  readonly manualClock?: boolean | 'running';
  /** The smallest `sessionTimeoutMs` a member may ask for (group.min.session.timeout.ms). Default 6,000. */
  readonly groupMinSessionTimeoutMs?: number;
  /** The largest `sessionTimeoutMs` a member may ask for (group.max.session.timeout.ms). Default 1,800,000. */
  readonly groupMaxSessionTimeoutMs?: number;
  /**
   * How long the first rebalance of an empty group waits for more members (KIP-134,
   * group.initial.rebalance.delay.ms). 0 lets a group form the moment its first member joins. Default 3,000.
   */
  readonly groupInitialRebalanceDelayMs?: number;
  /** The most members a group may have (group.max.size). Default unlimited. */
  readonly groupMaxSize?: number;
  /** The longest metadata string an offset commit may carry, in bytes. Default 4,096. */
  readonly offsetMetadataMaxBytes?: number;
  /**
   * How long an Empty group's offsets (and offsets committed outside any membership) are kept
   * (offsets.retention.minutes). Default 10,080 (seven days).
   */
  readonly offsetsRetentionMinutes?: number;
  /** How often expired offsets and Empty groups without offsets are removed. Default 600,000 (ten minutes). */
  readonly offsetsRetentionCheckIntervalMs?: number;
  /**
   * Where the server keeps durable state. Default: a fresh directory under the system's temp directory,
   * removed by `close()`. A directory you give is left in place.
   */
  readonly dataDir?: string;
  /** How much the server logs, as JSON lines on stdout. Default `silent`. */
  readonly logLevel?: LogLevel;
  /**
   * Where the admin listener (the live page, /metrics, /healthz, /readyz) listens, e.g. `'127.0.0.1:0'`
   * for a free port; `adminUrl` then gives its address. Default: off.
   */
  readonly adminListen?: string;
  /**
   * Where the Kafka wire-protocol listener listens: `'127.0.0.1:0'` (the default) for a free port, which
   * `kafkaAddress` then gives; `'off'` for none.
   */
  readonly kafkaListen?: string;
  /** A Kafka Metadata request naming an unknown topic creates it (auto.create.topics.enable). Default true. */
  readonly kafkaAutoCreateTopics?: boolean;
  /**
   * A Kafka connection idle this long (nothing read or written, no request of its own parked) is closed, on
   * the server's clock (connections.max.idle.ms). Default 600,000.
   */
  readonly kafkaConnectionsMaxIdleMs?: number;
  /** Record the (client id, api key, version) of every Kafka request, for `kafkaWireTrace`. Default false. */
  readonly kafkaWireTrace?: boolean;
}

/** A running embedded server, from `startServer`. */
export interface EmbeddedServer {
  /** `127.0.0.1:<port>`: pass it as `address` to `CohortClient`. */
  readonly address: string;
  /** The port the server bound (the operating system picked a free one). */
  readonly port: number;
  /** The data directory in use: `options.dataDir`, or the temporary one `close()` removes. */
  readonly dataDir: string;
  /** `http://HOST:PORT` of the admin listener (its live page is at `/`); absent without `adminListen`. */
  readonly adminUrl?: string;
  /** Live pages open now on the admin listener (`adminUrl`): 0 without one. */
  readonly openPages: number;
  /** `127.0.0.1:<port>` of the Kafka listener: a Kafka client's bootstrap server. Absent with `kafkaListen: 'off'`. */
  readonly kafkaAddress?: string;
  /**
   * With `kafkaWireTrace: true`, every Kafka request served so far: its client id, API key and version
   * (which versions each client chose). Empty otherwise.
   */
  readonly kafkaWireTrace: readonly { clientId: string | null; apiKey: number; apiVersion: number }[];
  /** Present only when started with `manualClock: true` or `'running'`; see `ManualClockServer.advanceClock`. */
  readonly advanceClock?: (ms: number) => Promise<number>;
  /**
   * Stops the server: new calls are refused, every parked call (a JoinGroup waiting for a rebalance, say) is
   * answered, calls in flight get a few seconds to finish, then the default data directory is removed.
   * Clients see retriable errors afterwards. Safe to call more than once; every call returns the same
   * promise. Call it in `afterEach`/`afterAll` so the test runner exits with no open handles.
   */
  close(): Promise<void>;
}

/** An embedded server whose clock moves only when told (or, `'running'`, also with wall time). */
export interface ManualClockServer extends EmbeddedServer {
  /**
   * Moves the server's clock forward by `ms` (a whole, non-negative number; on a running clock, a jump on
   * top of the wall time that passed) and runs, before resolving,
   * every timer that became due: session expiries, rebalance and sync timeouts, the initial rebalance
   * delay, offset retention checks (a check's removals are durable a little later: they are appends, and a
   * check over many groups runs in slices). Calls those timers answered are on their way to their clients when it resolves; wait for the
   * clients' events rather than assume they have arrived. Resolves with the server's wall clock after the
   * move (epoch milliseconds), as the TestClock service's Advance answers. Rejects with a RangeError for a
   * bad `ms`, and once the server is closed.
   *
   * Advance in steps shorter than the members' session timeout if they should survive: the server sees
   * only the heartbeats that reach it between steps.
   */
  advanceClock(ms: number): Promise<number>;
}

const LOOPBACK_ANY_PORT = '127.0.0.1:0';

/**
 * Starts a cohort server inside this process on 127.0.0.1, on a free port, for your own integration tests:
 * the way teams embed a broker in a test suite, without Docker or a child process.
 *
 * ```ts
 * const server = await startServer({ manualClock: true, groupInitialRebalanceDelayMs: 0 });
 * const client = new CohortClient({ address: server.address, clientId: 'test' });
 * // ... join, await events, `await server.advanceClock(10_000)` to let a session expire ...
 * await client.close();
 * await server.close();
 * ```
 *
 * Rejects with an `InvalidConfigError` listing every problem when the settings are inconsistent.
 */
export function startServer(
  options: StartServerOptions & { readonly manualClock: true | 'running' },
): Promise<ManualClockServer>;
export function startServer(options?: StartServerOptions): Promise<EmbeddedServer>;
export async function startServer(options: StartServerOptions = {}): Promise<EmbeddedServer> {
  const { dataDir, logLevel = 'silent', kafkaWireTrace = false, ...settings } = options;
  const ownsDataDir = dataDir === undefined;
  const dir = dataDir ?? (await mkdtemp(join(tmpdir(), 'cohort-')));
  const removeOwnDir = (): Promise<void> =>
    ownsDataDir ? rm(dir, { recursive: true, force: true }) : Promise.resolve();

  let server: CohortServer;
  try {
    const config = createConfig({ ...settings, dataDir: dir, logLevel, listen: LOOPBACK_ANY_PORT });
    // Synchronous writes: nothing is left buffered (or holding the process open) when a test run ends.
    const logger = pino({ level: logLevel }, pino.destination({ dest: 1, sync: true }));
    server = createServer(config, { logger, isKafkaWireTraced: kafkaWireTrace });
  } catch (error) {
    await removeOwnDir();
    throw error;
  }
  let port: number;
  try {
    ({ port } = await server.start());
    // Returned ready: group state loaded, so a first JoinGroup is never told COORDINATOR_LOAD_IN_PROGRESS.
    await server.ready();
  } catch (error) {
    await server.close();
    await removeOwnDir();
    throw error;
  }

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= server.close().then(removeOwnDir);
    return closing;
  };
  const handle: { -readonly [K in keyof EmbeddedServer]: EmbeddedServer[K] } = {
    address: `127.0.0.1:${port}`,
    port,
    dataDir: dir,
    ...(server.adminAddress === undefined ? {} : { adminUrl: server.adminAddress.url }),
    ...(server.kafkaAddress === undefined ? {} : { kafkaAddress: server.kafkaAddress.address }),
    get kafkaWireTrace() {
      return server.kafkaWireTrace;
    },
    get openPages() {
      return server.openPages;
    },
    close,
  };
  const testClock = server.testClock;
  if (testClock !== undefined) {
    handle.advanceClock = async (ms: number): Promise<number> => {
      if (closing !== undefined) throw new Error('the server is closed: its clock no longer moves');
      testClock.advance(ms); // runs every timer that became due, synchronously, as TestClock.Advance does
      return testClock.nowMs();
    };
  }
  return handle;
}

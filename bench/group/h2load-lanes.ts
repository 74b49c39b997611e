import { spawn, spawnSync } from 'node:child_process';

/**
 * Load from h2load (Debian's nghttp2-client), a C HTTP/2 client that costs far less per call than the Node
 * server it drives, so the server saturates first.
 *
 * gRPC over h2load: a POST with `content-type: application/grpc` and `te: trailers`, whose body file is
 * one framed message (bench/group/wire.ts `grpcFrame`). h2load sends the same body for every request of
 * one run, so heartbeats are spread over members by running `lanes` h2load processes at once, each run
 * sending `requestsPerRun` requests on one connection with `streamsPerLane` streams in flight, and each new
 * run taking the next member's body. Limits: between two runs a lane is idle for a process start and a
 * connection handshake (about 15 ms; the other lanes keep the server busy), each connection's handshake
 * costs the server the same on both sides, and within a window only a few hundred of the members are hot.
 * h2load counts HTTP statuses, not grpc-status (a trailer): the server counts the answers itself, and a
 * grpc-js client samples members before and after.
 */

export const H2LOAD = 'h2load';
export const INSTALL_HINT = 'apt-get update && apt-get install -y nghttp2-client';

export function hasH2load(): boolean {
  const probe = spawnSync(H2LOAD, ['--version'], { encoding: 'utf8' });
  return probe.status === 0;
}

export interface LanesOptions {
  readonly url: string;
  readonly lanes: number;
  readonly requestsPerRun: number;
  readonly streamsPerLane: number;
  /** The body file of the next run (a different member each time). */
  nextBody(): string;
}

export interface LoadTotals {
  runs: number;
  requests: number;
  succeeded: number;
  status2xx: number;
  failed: number;
  errored: number;
  timeout: number;
  /** Distinct body files (members) sent. */
  bodies: number;
}

const REQUESTS_LINE =
  /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/;
const STATUS_LINE = /status codes: (\d+) 2xx/;

function runOnce(options: LanesOptions, body: string, totals: LoadTotals): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const args = [
      '-n',
      String(options.requestsPerRun),
      '-c',
      '1',
      '-m',
      String(options.streamsPerLane),
      '-t',
      '1',
      '-d',
      body,
      '-H',
      'content-type: application/grpc',
      '-H',
      'te: trailers',
      options.url,
    ];
    const child = spawn(H2LOAD, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => (out += chunk));
    child.stderr.resume();
    child.once('error', reject);
    child.once('close', (code) => {
      const requests = REQUESTS_LINE.exec(out);
      const status = STATUS_LINE.exec(out);
      if (code !== 0 || requests === null || status === null) {
        reject(new Error(`h2load exited ${code}:\n${out}`));
        return;
      }
      totals.runs++;
      totals.requests += Number(requests[3]);
      totals.succeeded += Number(requests[4]);
      totals.failed += Number(requests[5]);
      totals.errored += Number(requests[6]);
      totals.timeout += Number(requests[7]);
      totals.status2xx += Number(status[1]);
      resolve();
    });
  });
}

/** Runs the lanes until `stop()`; each lane finishes its current run before stopping. */
export function startLanes(options: LanesOptions): { stop(): Promise<LoadTotals> } {
  const totals: LoadTotals = {
    runs: 0,
    requests: 0,
    succeeded: 0,
    status2xx: 0,
    failed: 0,
    errored: 0,
    timeout: 0,
    bodies: 0,
  };
  const bodies = new Set<string>();
  let isStopping = false;
  let failure: unknown;
  const lane = async (): Promise<void> => {
    while (!isStopping) {
      const body = options.nextBody();
      bodies.add(body);
      await runOnce(options, body, totals);
    }
  };
  const lanes = Array.from({ length: options.lanes }, () =>
    lane().catch((error: unknown) => {
      failure ??= error;
      isStopping = true;
    }),
  );
  return {
    stop: async () => {
      isStopping = true;
      await Promise.all(lanes);
      if (failure !== undefined) throw failure;
      totals.bodies = bodies.size;
      return totals;
    },
  };
}

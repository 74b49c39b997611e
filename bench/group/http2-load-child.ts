/**
 * The fallback load generator, used only when h2load is not installed: raw Node http2 sessions in their own
 * process sending pre-framed gRPC bodies (no grpc-js on the client side). It costs more CPU per call than
 * h2load, so on a small machine it may saturate before the server does; bench:group labels its figures
 * "node-http2 fallback" when it runs. Unlike h2load it rotates the member on every request and reads each
 * call's grpc-status trailer.
 */
import { readFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import { serveParent } from './child-rpc';

export interface Http2LoadPlan {
  readonly authority: string;
  readonly path: string;
  readonly bodyFiles: readonly string[];
  readonly sessions: number;
  readonly streamsPerSession: number;
}

export interface Http2LoadTotals {
  requests: number;
  status200: number;
  grpcOk: number;
  errored: number;
  bodies: number;
}

let isRunning = false;
let sessions: http2.ClientHttp2Session[] = [];
let totals: Http2LoadTotals = { requests: 0, status200: 0, grpcOk: 0, errored: 0, bodies: 0 };
let inFlight = 0;
let drained: (() => void) | undefined;

function start(plan: Http2LoadPlan): void {
  const bodies = plan.bodyFiles.map((file) => readFileSync(file));
  let cursor = 0;
  totals = { requests: 0, status200: 0, grpcOk: 0, errored: 0, bodies: 0 };
  isRunning = true;
  const headers = {
    ':method': 'POST',
    ':path': plan.path,
    'content-type': 'application/grpc',
    te: 'trailers',
  };
  const issue = (session: http2.ClientHttp2Session): void => {
    const body = bodies[cursor++ % bodies.length];
    // The fallback visits a new member on every request: after one lap, every member has been driven.
    totals.bodies = Math.min(bodies.length, cursor);
    inFlight++;
    const stream = session.request(headers);
    let status = 0;
    let grpcStatus: string | undefined;
    stream.on('response', (h) => {
      status = Number(h[':status']);
      // A trailers-only answer carries grpc-status in the headers.
      if (h['grpc-status'] !== undefined) grpcStatus = String(h['grpc-status']);
    });
    stream.on('trailers', (t) => (grpcStatus = String(t['grpc-status'])));
    stream.on('data', () => undefined);
    stream.on('error', () => totals.errored++);
    stream.on('close', () => {
      inFlight--;
      totals.requests++;
      if (status === 200) totals.status200++;
      if (grpcStatus === '0') totals.grpcOk++;
      if (isRunning) issue(session);
      else if (inFlight === 0) drained?.();
    });
    stream.end(body);
  };
  for (let s = 0; s < plan.sessions; s++) {
    const session = http2.connect(`http://${plan.authority}`);
    session.on('error', () => totals.errored++);
    sessions.push(session);
    for (let i = 0; i < plan.streamsPerSession; i++) issue(session);
  }
}

async function stop(): Promise<Http2LoadTotals> {
  isRunning = false;
  if (inFlight > 0) await new Promise<void>((resolve) => (drained = resolve));
  for (const session of sessions) session.close();
  sessions = [];
  return totals;
}

serveParent(
  {
    start: (plan: Http2LoadPlan) => start(plan),
    stop: () => stop(),
  },
  async () => {
    await stop();
  },
);

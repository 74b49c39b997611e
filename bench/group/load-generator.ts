import { join } from 'node:path';
import { startChild } from './child-rpc';
import { hasH2load, INSTALL_HINT, startLanes } from './h2load-lanes';
import type { Http2LoadTotals } from './http2-load-child';

/** What one side's load run sent, as the load generator counted it. */
export interface SentTotals {
  /** Requests answered with HTTP 200 (h2load: "succeeded"). */
  readonly answered: number;
  /** Requests that failed at the HTTP/2 level. */
  readonly failed: number;
  /** Distinct members whose heartbeat was sent. */
  readonly members: number;
}

export interface LoadGenerator {
  readonly label: 'h2load' | 'node-http2 fallback';
  /** Starts sending to `path` on `authority` until the returned stop() is awaited. */
  start(authority: string, path: string): Promise<{ stop(): Promise<SentTotals> }>;
  close(): Promise<void>;
}

export interface LoadShape {
  readonly lanes: number;
  readonly streamsPerLane: number;
  readonly requestsPerRun: number;
  /** One framed HeartbeatRequest per member, in the order members are visited. */
  readonly bodyFiles: readonly string[];
}

/** h2load when installed (the cheap client the figures are meant for), else the labelled Node fallback. */
export function createLoadGenerator(shape: LoadShape, log: (text: string) => void): LoadGenerator {
  let cursor = 0;
  const nextBody = (): string => shape.bodyFiles[cursor++ % shape.bodyFiles.length];
  if (hasH2load()) {
    return {
      label: 'h2load',
      start: async (authority, path) => {
        const lanes = startLanes({
          url: `http://${authority}${path}`,
          lanes: shape.lanes,
          requestsPerRun: shape.requestsPerRun,
          streamsPerLane: shape.streamsPerLane,
          nextBody,
        });
        return {
          stop: async () => {
            const totals = await lanes.stop();
            return {
              answered: totals.succeeded,
              failed: totals.failed + totals.errored + totals.timeout + (totals.requests - totals.status2xx),
              members: totals.bodies,
            };
          },
        };
      },
      close: async () => undefined,
    };
  }
  log(`h2load is not installed (${INSTALL_HINT}); falling back to a raw Node http2 client.`);
  log('FALLBACK: the Node client costs about as much CPU as the server; calls/s may be client-bound.');
  const child = startChild(join(__dirname, 'http2-load-child.ts'));
  return {
    label: 'node-http2 fallback',
    start: async (authority, path) => {
      // Rotate through the members from where the last run stopped.
      const offset = cursor % shape.bodyFiles.length;
      const bodyFiles = [...shape.bodyFiles.slice(offset), ...shape.bodyFiles.slice(0, offset)];
      await child.request('start', {
        authority,
        path,
        bodyFiles,
        sessions: shape.lanes,
        streamsPerSession: shape.streamsPerLane,
      });
      return {
        stop: async () => {
          const totals = await child.request<Http2LoadTotals>('stop');
          cursor += totals.requests;
          return {
            answered: totals.grpcOk,
            failed: totals.requests - totals.grpcOk + totals.errored,
            members: totals.bodies,
          };
        },
      };
    },
    close: () => child.stop(),
  };
}

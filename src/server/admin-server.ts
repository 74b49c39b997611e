import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { parseListenAddress } from '../config';
import type { Time } from '../time';
import { loadAdminPageAssets, type AdminPageAsset } from '../live/admin-page-assets';
import { AUTHORIZATION_METADATA_KEY, type BearerTokenCheck } from './bearer-token-interceptor';
import type { ClusterBoard } from '../live/cluster-board';
import type { GroupBoard } from '../live/group-board';
import { PageFlushes, PageStream } from '../live/page-stream';
import type { WatchLimits } from './watch-groups';

/** Why the server is not ready, or undefined when it serves. */
export type Readiness = () => string | undefined;

export interface AdminServerOptions {
  /** HOST:PORT; port 0 picks a free one. */
  readonly listen: string;
  readonly readiness: Readiness;
  /** The Prometheus exposition and its content type. */
  readonly scrape: () => Promise<string>;
  readonly contentType: string;
  readonly logger: Logger;
  /**
   * When set, every path but /healthz and /readyz needs `authorization: Bearer <token>`: /metrics and
   * the page's stream (the page's static files hold no data and are served to anyone).
   */
  readonly tokenCheck?: BearerTokenCheck;
  /** The live page (`/`, its files and `/api/stream`); without it those paths are 404. */
  readonly page?: AdminPageOptions;
  /**
   * Cluster mode: `POST /recover-metadata?nodes=1,2,3` rebuilds the cluster's metadata after etcd lost it
   * (ClusterWiring.recoverMetadata); without it the path is 404.
   */
  readonly recoverMetadata?: (nodes: readonly number[]) => Promise<RecoverMetadataAnswer>;
}

/** What a metadata recovery did, or why it did nothing. */
export type RecoverMetadataAnswer =
  | { readonly outcome: 'recovered'; readonly topics: number; readonly partitions: number }
  | { readonly outcome: 'refused'; readonly problems: readonly string[] };

/** What the live page needs: the groups' and the cluster's models, and how far a page may fall behind. */
export interface AdminPageOptions {
  readonly board: GroupBoard;
  /** The Cluster panel's model; without it the page shows no cluster panel. */
  readonly cluster?: ClusterBoard;
  readonly limits: WatchLimits;
  readonly time: Time;
  /**
   * The clock the streams' flushes wait on (PageFlushes); default `time`. The server passes the machine's
   * even on a manual clock, so that a page shows a change without the clock being moved.
   */
  readonly flushTime?: Time;
  /** A page was dropped for falling behind (for the log and a metric). */
  readonly onPageDropped?: (pendingGroups: number) => void;
}

export interface AdminAddress {
  readonly host: string;
  readonly port: number;
  /** `http://HOST:PORT`, for humans and probes. */
  readonly url: string;
}

const TEXT = 'text/plain; charset=utf-8';
/** Where a page says which group it shows. */
const SELECT_PATH = '/api/stream/select';
/** Where an operator rebuilds the cluster's metadata after etcd lost it. */
const RECOVER_METADATA_PATH = '/recover-metadata';

/**
 * The page loads only its own files and talks only to its own origin; nothing inline runs, so a group id
 * that slipped into markup still could not execute.
 */
const PAGE_SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
});

/** Every `authorization` header of a request: Node keeps only the first in `headers`. */
function authorizationHeaders(request: IncomingMessage): string[] {
  const values: string[] = [];
  const raw = request.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i].toLowerCase() === AUTHORIZATION_METADATA_KEY) values.push(raw[i + 1]);
  }
  return values;
}

/**
 * The admin HTTP listener an orchestrator probes and Prometheus scrapes:
 *
 * - `GET /healthz`: 200 while the process runs and its event loop answers (a liveness probe);
 * - `GET /readyz`: 200 while the server serves, 503 with the reason while it starts, loads group state
 *   or shuts down (a readiness probe: take the pod out of rotation, do not restart it);
 * - `GET /metrics`: every metric of the server, in the Prometheus text format;
 * - `GET /` and `/assets/*`: the live page of groups, rebalances, lag and the cluster (docs/live-page.md);
 * - `GET /api/stream[?group=ID]`: the page's data, as Server-Sent Events (page-stream.ts); `group` names
 *   the group whose detail the page shows (its members' heartbeat ages are sent);
 * - `POST /api/stream/select?stream=ID[&group=ID]`: the page now shows another group (or none, without
 *   `group`); `stream` is the id of the stream's `hello` frame. 204, or 404 for a stream that is gone.
 * - `POST /recover-metadata?nodes=1,2,3` (cluster mode): rebuilds the cluster's metadata in etcd from the
 *   nodes' logs after etcd lost it (docs/operations.md). 200 with what was written, 409 with every reason
 *   it was not, 400 for a node list that does not parse.
 *
 * HEAD works wherever GET does (the stream excepted); the select path takes POST only; other methods get
 * 405, other paths 404. With a bearer token configured, /metrics and /api/stream* answer 401 without it;
 * /healthz and /readyz never ask for it (probes carry no secrets), nor do the page's static files, which
 * hold no data.
 */
export class AdminServer {
  private readonly http = createHttpServer((request, response) => void this.handle(request, response));
  private bound: AdminAddress | undefined;
  private assets: ReadonlyMap<string, AdminPageAsset> | undefined;
  /** Open page streams by id. */
  private readonly streams = new Map<string, PageStream>();
  /** When the pages' streams write (one timer for all of them); made with the first stream. */
  private flushes: PageFlushes | undefined;

  constructor(private readonly options: AdminServerOptions) {
    // Keep-alive connections of a scraper must not hold close() up.
    this.http.keepAliveTimeout = 5_000;
  }

  /** Live pages open now (their streams). */
  get openPages(): number {
    return this.streams.size;
  }

  get address(): AdminAddress | undefined {
    return this.bound;
  }

  start(): Promise<AdminAddress> {
    const address = parseListenAddress(this.options.listen);
    if (address === undefined)
      return Promise.reject(new TypeError(`${this.options.listen} is not HOST:PORT`));
    // Node takes IPv6 hosts without their brackets.
    const host = address.host.replace(/^\[(.*)\]$/, '$1');
    return new Promise((resolve, reject) => {
      // The port is most often taken by another program (a second cohort, a Prometheus): say which setting
      // moves it, since the address alone does not tell an operator where it came from.
      const onError = (error: NodeJS.ErrnoException): void =>
        reject(
          new Error(
            `the admin listener cannot listen on ${this.options.listen}` +
              `${error.code === undefined ? '' : ` (${error.code})`}: set --admin-listen (COHORT_ADMIN_LISTEN) ` +
              'to a free HOST:PORT, or to off',
            { cause: error },
          ),
        );
      this.http.once('error', onError);
      this.http.listen(address.port, host, () => {
        this.http.removeListener('error', onError);
        this.http.on('error', (error) => this.options.logger.error({ err: error }, 'admin listener failed'));
        const port = (this.http.address() as AddressInfo).port;
        this.bound = { host: address.host, port, url: `http://${address.host}:${port}` };
        resolve(this.bound);
      });
    });
  }

  /** Stops listening and ends every open connection. Idempotent. */
  close(): Promise<void> {
    for (const stream of [...this.streams.values()]) stream.end();
    this.flushes?.close();
    this.flushes = undefined;
    if (!this.http.listening) return Promise.resolve();
    return new Promise((resolve) => {
      this.http.close(() => resolve());
      this.http.closeAllConnections();
    });
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://admin');
    const path = url.pathname;
    const method = request.method ?? 'GET';
    const isPost =
      (path === SELECT_PATH && this.options.page !== undefined) ||
      (path === RECOVER_METADATA_PATH && this.options.recoverMetadata !== undefined);
    if (isPost ? method !== 'POST' : method !== 'GET' && method !== 'HEAD') {
      const allowed = isPost ? 'POST' : 'GET, HEAD';
      this.reply(response, method, 405, TEXT, `only ${allowed.replace(', ', ' and ')}\n`, { allow: allowed });
      return;
    }
    if (path !== '/healthz' && path !== '/readyz' && this.options.tokenCheck !== undefined) {
      const page = this.options.page !== undefined ? this.asset(path) : undefined;
      const refusal =
        page === undefined ? this.options.tokenCheck.refusalOf(authorizationHeaders(request)) : undefined;
      if (refusal !== undefined) {
        this.reply(response, method, 401, TEXT, `${refusal}\n`, { 'www-authenticate': 'Bearer' });
        return;
      }
    }
    const asset = this.options.page !== undefined ? this.asset(path) : undefined;
    if (asset !== undefined) {
      this.reply(response, method, 200, asset.contentType, asset.body, PAGE_SECURITY_HEADERS);
      return;
    }
    switch (path) {
      case RECOVER_METADATA_PATH: {
        const recover = this.options.recoverMetadata;
        if (recover === undefined) break;
        request.resume();
        const text = url.searchParams.get('nodes') ?? '';
        const nodes = text.split(',').map((id) => (/^\d+$/.test(id.trim()) ? Number(id.trim()) : NaN));
        if (text === '' || nodes.some((id) => !Number.isSafeInteger(id))) {
          this.reply(response, method, 400, TEXT, 'name every node of the cluster: ?nodes=1,2,3\n');
          return;
        }
        let answer: RecoverMetadataAnswer;
        try {
          answer = await recover(nodes);
        } catch (error) {
          this.options.logger.error({ err: error }, 'the metadata recovery failed');
          this.reply(
            response,
            method,
            503,
            TEXT,
            'the metadata recovery failed (etcd?); the server log has why\n',
          );
          return;
        }
        if (answer.outcome === 'recovered') {
          this.reply(response, method, 200, 'application/json', `${JSON.stringify(answer)}\n`);
        } else {
          this.reply(
            response,
            method,
            409,
            TEXT,
            `not recovered:\n${answer.problems.map((p) => `- ${p}\n`).join('')}`,
          );
        }
        return;
      }
      case SELECT_PATH: {
        const page = this.options.page;
        if (page === undefined) break;
        request.resume();
        const stream = this.streams.get(url.searchParams.get('stream') ?? '');
        if (stream === undefined) {
          this.reply(response, method, 404, TEXT, 'no such stream: it closed, or the page must reconnect\n');
          return;
        }
        page.board.select(stream, url.searchParams.get('group') ?? undefined);
        response.writeHead(204, { 'cache-control': 'no-store' }).end();
        return;
      }
      case '/api/stream': {
        const page = this.options.page;
        if (page === undefined || method === 'HEAD') break;
        this.flushes ??= new PageFlushes(page.flushTime ?? page.time);
        const stream = new PageStream(response, page.limits, page.time, this.flushes, (pending) => {
          this.options.logger.info({ pendingGroups: pending }, 'an admin page fell behind and was dropped');
          page.onPageDropped?.(pending);
        });
        this.streams.set(stream.id, stream);
        response.on('close', () => this.streams.delete(stream.id));
        const selected = url.searchParams.get('group') ?? undefined;
        stream.open((listener) => {
          const seat = page.board.open(listener);
          if (seat === undefined) return undefined;
          if (selected !== undefined) page.board.select(listener, selected);
          const leaveCluster = page.cluster?.open(listener);
          return {
            takeRows: () => seat.takeRows(),
            pendingGroups: () => seat.pendingGroups(),
            leave: () => {
              seat.leave();
              leaveCluster?.();
            },
          };
        });
        return;
      }
      case '/healthz':
        this.reply(response, method, 200, TEXT, 'ok\n');
        return;
      case '/readyz': {
        const reason = this.options.readiness();
        if (reason === undefined) this.reply(response, method, 200, TEXT, 'ready\n');
        else this.reply(response, method, 503, TEXT, `not ready: ${reason}\n`);
        return;
      }
      case '/metrics': {
        let body: string;
        try {
          body = await this.options.scrape();
        } catch (error) {
          this.options.logger.error({ err: error }, 'metrics could not be collected');
          this.reply(response, method, 500, TEXT, 'metrics could not be collected; the server log has why\n');
          return;
        }
        this.reply(response, method, 200, this.options.contentType, body);
        return;
      }
    }
    this.reply(response, method, 404, TEXT, 'not found: try /, /healthz, /readyz or /metrics\n');
  }

  /** A static file of the page, read on first use. */
  private asset(path: string): AdminPageAsset | undefined {
    if (path !== '/' && !path.startsWith('/assets/')) return undefined;
    this.assets ??= loadAdminPageAssets();
    return this.assets.get(path);
  }

  private reply(
    response: ServerResponse,
    method: string,
    status: number,
    contentType: string,
    body: string | Buffer,
    headers: Readonly<Record<string, string>> = {},
  ): void {
    response.writeHead(status, {
      'content-type': contentType,
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-store',
      ...headers,
    });
    response.end(method === 'HEAD' ? undefined : body);
  }
}

import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { parseListenAddress } from '../config';

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
}

export interface AdminAddress {
  readonly host: string;
  readonly port: number;
  /** `http://HOST:PORT`, for humans and probes. */
  readonly url: string;
}

const TEXT = 'text/plain; charset=utf-8';

/**
 * The admin HTTP listener an orchestrator probes and Prometheus scrapes:
 *
 * - `GET /healthz`: 200 while the process runs and its event loop answers (a liveness probe);
 * - `GET /readyz`: 200 while the server serves, 503 with the reason while it starts, loads group state
 *   or shuts down (a readiness probe: take the pod out of rotation, do not restart it);
 * - `GET /metrics`: every metric of the server, in the Prometheus text format.
 *
 * HEAD works wherever GET does; other methods get 405, other paths 404. Nothing here needs or checks a
 * token: bind it where only the orchestrator and the scraper reach it.
 */
export class AdminServer {
  private readonly http = createHttpServer((request, response) => void this.handle(request, response));
  private bound: AdminAddress | undefined;

  constructor(private readonly options: AdminServerOptions) {
    // Keep-alive connections of a scraper must not hold close() up.
    this.http.keepAliveTimeout = 5_000;
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
    if (!this.http.listening) return Promise.resolve();
    return new Promise((resolve) => {
      this.http.close(() => resolve());
      this.http.closeAllConnections();
    });
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? '/').split('?')[0];
    const method = request.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') {
      this.reply(response, method, 405, TEXT, 'only GET and HEAD\n', { allow: 'GET, HEAD' });
      return;
    }
    switch (path) {
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
      default:
        this.reply(response, method, 404, TEXT, 'not found: try /healthz, /readyz or /metrics\n');
    }
  }

  private reply(
    response: ServerResponse,
    method: string,
    status: number,
    contentType: string,
    body: string,
    headers: Record<string, string> = {},
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

import * as http2 from 'node:http2';
import { asError, decodeOnlyMessage, framedMessage } from './grpc-framing';
import type { UnaryChannels } from './unary-channels';

/**
 * Unary gRPC calls over raw Node http2 sessions, without grpc-js on the client: a call is one stream with
 * the request framed as gRPC frames it (a 1-byte flag and a 4-byte length before the protobuf bytes); the
 * answer is read back from its DATA frames and its `grpc-status` trailer (or a trailers-only answer's
 * headers). A grpc-js call costs its client several times what the server spends on it, so the rebalance
 * bench uses these by default to measure the server, not the client; `--client=grpc-js` switches back.
 */
export class Http2Channels implements UnaryChannels {
  private readonly sessions: http2.ClientHttp2Session[] = [];
  private readonly headersByPath = new Map<string, http2.OutgoingHttpHeaders>();

  constructor(target: string, count: number) {
    for (let i = 0; i < count; i++) {
      const session = http2.connect(`http://${target}`);
      // A failed session fails its open streams, whose promises reject; nothing else to do here.
      session.on('error', () => undefined);
      this.sessions.push(session);
    }
  }

  get size(): number {
    return this.sessions.length;
  }

  call<Res>(
    channel: number,
    path: string,
    request: Buffer,
    decode: (bytes: Buffer) => Res,
    onSent?: () => void,
  ): Promise<Res> {
    const session = this.sessions[channel % this.sessions.length];
    const framed = framedMessage(request);
    return new Promise<Res>((resolve, reject) => {
      const stream = session.request(this.headersFor(path));
      const chunks: Buffer[] = [];
      let grpcStatus: string | undefined;
      let grpcMessage = '';
      const readStatus = (headers: http2.IncomingHttpHeaders): void => {
        if (headers['grpc-status'] !== undefined) grpcStatus = String(headers['grpc-status']);
        if (headers['grpc-message'] !== undefined) grpcMessage = String(headers['grpc-message']);
      };
      stream.on('response', readStatus);
      stream.on('trailers', readStatus);
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', reject);
      stream.on('close', () => {
        if (grpcStatus !== '0') {
          reject(new Error(`${path}: grpc-status ${grpcStatus ?? 'missing'} ${grpcMessage}`));
          return;
        }
        try {
          resolve(decodeOnlyMessage(path, chunks, decode));
        } catch (error) {
          reject(asError(error));
        }
      });
      // The callback runs on 'finish': the request's frames have been handed to the session's socket.
      stream.end(framed, onSent);
    });
  }

  close(): void {
    for (const session of this.sessions.splice(0)) session.close();
  }

  private headersFor(path: string): http2.OutgoingHttpHeaders {
    let headers = this.headersByPath.get(path);
    if (headers === undefined) {
      headers = { ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' };
      this.headersByPath.set(path, headers);
    }
    return headers;
  }
}

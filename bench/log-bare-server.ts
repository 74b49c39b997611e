/**
 * The baseline of bench:log's long-poll figure: the least a grpc-js server can do to wake a parked call.
 * `Park` holds its callback; `Release` answers every parked call with a fixed payload (the size of a fetch
 * response carrying one 100-byte record), then itself with the number released. Messages are raw bytes, so
 * no encoding is measured on this side; it prints {"port": N} and runs until its stdin closes.
 */
import { Server, ServerCredentials } from '@grpc/grpc-js';
import type { sendUnaryData, ServerUnaryCall } from '@grpc/grpc-js';
import { BARE_SERVICE } from './log-bare-service';

const PAYLOAD = Buffer.alloc(160, 7);
const parked = new Set<sendUnaryData<Buffer>>();

const server = new Server();
server.addService(BARE_SERVICE, {
  Park: (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
    parked.add(callback);
    call.once('cancelled', () => parked.delete(callback));
  },
  Release: (_call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
    const released = [...parked];
    parked.clear();
    for (const park of released) park(null, PAYLOAD);
    callback(null, Buffer.from(String(released.length)));
  },
  Count: (_call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
    callback(null, Buffer.from(String(parked.size)));
  },
});
server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) => {
  if (error !== null) throw error;
  process.stdout.write(`${JSON.stringify({ port })}\n`);
});
process.stdin.resume();
process.stdin.on('end', () => server.forceShutdown());
process.stdin.on('close', () => process.exit(0));

/**
 * A few client connections to one server that make unary gRPC calls whose requests were encoded before
 * the clock started. Two implementations: grpc-js (`BenchChannels`) and raw Node http2
 * (`Http2Channels`), so the rebalance bench can tell the client's cost from the server's.
 */
export interface UnaryChannels {
  readonly size: number;
  /**
   * One call on connection `channel % size`: `request` is the protobuf encoding, not yet framed.
   * `onSent`, when the implementation can tell, runs once the request has been written to the connection
   * (grpc-js cannot tell: it never calls it).
   */
  call<Res>(
    channel: number,
    path: string,
    request: Buffer,
    decode: (bytes: Buffer) => Res,
    onSent?: () => void,
  ): Promise<Res>;
  close(): void;
}

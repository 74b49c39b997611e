/**
 * A request the Kafka door cannot read: a truncated or malformed frame, a length past the frame's end, an
 * int64 that is not a safe integer. The connection that sent it is closed (Kafka closes it too); nothing of
 * the message reaches a client.
 */
export class KafkaProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KafkaProtocolError';
  }
}

/**
 * Thrown when subscription or assignment bytes are not a consumer-protocol message this SDK can read: a
 * member running something else in the same group, a leader with a broken custom assignor, or corruption.
 * `offset` is where in the bytes decoding stopped.
 */
export class ConsumerProtocolError extends Error {
  readonly offset: number;

  constructor(message: string, offset: number) {
    super(message);
    this.name = 'ConsumerProtocolError';
    this.offset = offset;
  }
}

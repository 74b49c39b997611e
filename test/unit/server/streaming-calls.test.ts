import type { ServerInterceptingCallInterface, ServerMethodDefinition } from '@grpc/grpc-js';
import { StreamingCalls } from '../../../src/server/streaming-calls';

const method = (
  requestStream: boolean,
  responseStream: boolean,
): ServerMethodDefinition<unknown, unknown> => ({
  path: '/p.S/M',
  requestStream,
  responseStream,
  requestDeserialize: (bytes: Buffer) => bytes,
  responseSerialize: (value: unknown) => value as Buffer,
});

describe('StreamingCalls', () => {
  it('hands a unary call on as it is: no wrapper, no cost', () => {
    const calls = new StreamingCalls({ maxPerConnection: 1, maxTotal: 1 });
    const call = { getPeer: () => '127.0.0.1:1' } as unknown as ServerInterceptingCallInterface;
    expect(calls.interceptor(method(false, false), call)).toBe(call);
    expect(calls.openCount).toBe(0);
  });

  it('wraps every kind of streaming call', () => {
    const calls = new StreamingCalls({ maxPerConnection: 1, maxTotal: 1 });
    const call = { getPeer: () => '127.0.0.1:1' } as unknown as ServerInterceptingCallInterface;
    for (const [requestStream, responseStream] of [
      [false, true],
      [true, false],
      [true, true],
    ]) {
      expect(calls.interceptor(method(requestStream, responseStream), call)).not.toBe(call);
    }
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses a bound of %p', (bound) => {
    expect(() => new StreamingCalls({ maxPerConnection: bound, maxTotal: 1 })).toThrow(RangeError);
    expect(() => new StreamingCalls({ maxPerConnection: 1, maxTotal: bound })).toThrow(RangeError);
  });
});

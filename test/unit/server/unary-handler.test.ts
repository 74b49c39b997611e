import { Metadata, status } from '@grpc/grpc-js';
import { CohortError, ERROR_TABLE, ErrorCode } from '../../../src/errors';
import type { RequestContext } from '../../../src/group/group-protocol';
import { ERROR_CODE_TRAILER, INTERNAL_ERROR_MESSAGE, unaryHandler } from '../../../src/server';
import type { CallObserver } from '../../../src/server/unary-handler';
import type { BrokerRequestContext } from '../../../src/log/broker-protocol';
import {
  NODE_AUTH_METADATA_KEY,
  NODE_ID_METADATA_KEY,
  nodeAuthFor,
  NodeCredentialsCheck,
  WRONG_NODE_MESSAGE,
} from '../../../src/server/node-credentials';
import { UndecodableRequest } from '../../../src/server/undecodable-request';
import { captureLogger } from '../../support/capture-logger';
import { FakeUnaryCall, settle } from './fake-unary-call';

interface Echo {
  text: string;
}

function deferred<T>(): { promise: Promise<T>; resolve(value: T): void; reject(error: unknown): void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('unaryHandler', () => {
  it('answers OK with the response the domain returns', async () => {
    const { logger } = captureLogger();
    const handler = unaryHandler('/t/Echo', logger, async (request: Echo) => ({ text: request.text + '!' }));
    const call = new FakeUnaryCall<Echo, Echo>({ text: 'hi' });
    handler(call, call.callback);
    await settle();
    expect(call.replies).toEqual([{ error: null, response: { text: 'hi!' } }]);
  });

  it('maps a CohortError to its table status and message, with the code in a trailer', async () => {
    const { logger, lines } = captureLogger();
    const handler = unaryHandler('/t/Echo', logger, async () => {
      throw new CohortError(ErrorCode.INVALID_GROUP_ID);
    });
    const call = new FakeUnaryCall<Echo>({ text: '' });
    handler(call, call.callback);
    await settle();
    expect(call.replies).toHaveLength(1);
    const { error } = call.replies[0];
    expect(error?.code).toBe(status.INVALID_ARGUMENT);
    expect(error?.details).toBe(ERROR_TABLE[ErrorCode.INVALID_GROUP_ID].message);
    expect(error?.metadata?.get(ERROR_CODE_TRAILER)).toEqual([String(ErrorCode.INVALID_GROUP_ID)]);
    expect(lines).toEqual([]);
  });

  it('keeps the explicit message of a CohortError', async () => {
    const { logger } = captureLogger();
    const handler = unaryHandler('/t/Echo', logger, async () => {
      throw new CohortError(ErrorCode.INVALID_REQUEST, 'ms (-1) must be >= 0');
    });
    const call = new FakeUnaryCall<Echo>({ text: '' });
    handler(call, call.callback);
    await settle();
    expect(call.replies[0].error).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: 'ms (-1) must be >= 0',
    });
  });

  it.each([
    [
      'a rejected promise',
      async (): Promise<Echo> => Promise.reject(new Error('secret table t_members is corrupt')),
    ],
    [
      'a synchronous throw',
      (): Promise<Echo> => {
        throw new Error('secret table t_members is corrupt');
      },
    ],
  ])('answers INTERNAL with a generic message for %s and logs the stack, never echoing it', async (_, fn) => {
    const { logger, lines } = captureLogger();
    const handler = unaryHandler('/t/Echo', logger, fn);
    const call = new FakeUnaryCall<Echo>({ text: '' }, '10.1.2.3:4444');
    handler(call, call.callback);
    await settle();
    expect(call.replies).toHaveLength(1);
    expect(call.replies[0].error).toMatchObject({ code: status.INTERNAL, details: INTERNAL_ERROR_MESSAGE });
    expect(call.replies[0].error?.details).not.toContain('secret');
    expect(call.replies[0].error?.metadata?.get(ERROR_CODE_TRAILER)).toEqual([
      String(ErrorCode.UNKNOWN_SERVER_ERROR),
    ]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 50, method: '/t/Echo', peer: '10.1.2.3:4444' });
    const err = lines[0].err as { message: string; stack: string };
    expect(err.message).toBe('secret table t_members is corrupt');
    expect(err.stack).toContain('unary-handler.test.ts');
  });

  it('treats a CohortError carrying NONE as a bug: INTERNAL, logged', async () => {
    const { logger, lines } = captureLogger();
    const handler = unaryHandler('/t/Echo', logger, async () => {
      throw new CohortError(ErrorCode.NONE);
    });
    const call = new FakeUnaryCall<Echo>({ text: '' });
    handler(call, call.callback);
    await settle();
    expect(call.replies[0].error).toMatchObject({ code: status.INTERNAL, details: INTERNAL_ERROR_MESSAGE });
    expect(lines).toHaveLength(1);
  });

  it('answers INVALID_ARGUMENT for a request that could not be decoded, without calling the domain', async () => {
    const { logger, lines } = captureLogger();
    const domain = jest.fn(async () => ({ text: '' }));
    const handler = unaryHandler('/t/Echo', logger, domain);
    const call = new FakeUnaryCall<Echo>(new UndecodableRequest(new Error('index out of range')));
    handler(call, call.callback);
    await settle();
    expect(domain).not.toHaveBeenCalled();
    expect(call.replies).toHaveLength(1);
    expect(call.replies[0].error?.code).toBe(status.INVALID_ARGUMENT);
    expect(call.replies[0].error?.details).not.toContain('index out of range');
    expect(lines).toEqual([]);
  });

  it('runs the cancel listeners when the call is cancelled and never replies into the dead call', async () => {
    const { logger } = captureLogger();
    const parked = deferred<Echo>();
    const ran: string[] = [];
    const handler = unaryHandler('/t/Echo', logger, (_: Echo, ctx) => {
      ctx.onCancel?.(() => ran.push('first'));
      const unregister = ctx.onCancel?.(() => ran.push('unregistered'));
      ctx.onCancel?.(() => ran.push('third'));
      unregister?.();
      return parked.promise;
    });
    const call = new FakeUnaryCall<Echo>({ text: '' });
    handler(call, call.callback);
    expect(ran).toEqual([]);
    call.cancel();
    call.cancel();
    expect(ran).toEqual(['first', 'third']);
    parked.resolve({ text: 'too late' });
    await settle();
    expect(call.replies).toEqual([]);
  });

  it('logs a cancel listener that throws and still runs the others', async () => {
    const { logger, lines } = captureLogger();
    let ran = 0;
    const handler = unaryHandler('/t/Echo', logger, (_: Echo, ctx) => {
      ctx.onCancel?.(() => {
        throw new Error('listener bug');
      });
      ctx.onCancel?.(() => ran++);
      return new Promise<Echo>(() => undefined);
    });
    const call = new FakeUnaryCall<Echo>({ text: '' });
    handler(call, call.callback);
    call.cancel();
    expect(ran).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 50, method: '/t/Echo', msg: 'a cancel listener failed' });
  });

  it('runs a cancel listener at once when it is registered after the cancellation', async () => {
    const { logger } = captureLogger();
    let context: RequestContext | undefined;
    const handler = unaryHandler('/t/Echo', logger, (_: Echo, ctx) => {
      context = ctx;
      return new Promise<Echo>(() => undefined);
    });
    const call = new FakeUnaryCall<Echo>({ text: '' });
    handler(call, call.callback);
    call.cancel();
    let ran = 0;
    context?.onCancel?.(() => ran++);
    expect(ran).toBe(1);
  });

  it('does not cancel a call it has already answered', async () => {
    const { logger } = captureLogger();
    let ran = 0;
    const handler = unaryHandler('/t/Echo', logger, async (_: Echo, ctx) => {
      ctx.onCancel?.(() => ran++);
      return { text: 'done' };
    });
    const call = new FakeUnaryCall<Echo>({ text: '' });
    handler(call, call.callback);
    await settle();
    // grpc-js emits 'cancelled' after every finished call, as the stream closes.
    call.cancel();
    expect(ran).toBe(0);
    expect(call.replies).toHaveLength(1);
  });

  it('does not call the domain for a call cancelled before the handler ran', async () => {
    const { logger } = captureLogger();
    const domain = jest.fn(async () => ({ text: '' }));
    const handler = unaryHandler('/t/Echo', logger, domain);
    const call = new FakeUnaryCall<Echo>({ text: '' });
    call.cancelled = true;
    handler(call, call.callback);
    await settle();
    expect(domain).not.toHaveBeenCalled();
    expect(call.replies).toEqual([]);
  });

  it('still logs an unexpected failure that arrives after the caller left, but not the AbortError it asked for', async () => {
    const { logger, lines } = captureLogger();
    const failures = [deferred<Echo>(), deferred<Echo>()];
    let next = 0;
    const handler = unaryHandler('/t/Echo', logger, () => failures[next++].promise);
    const first = new FakeUnaryCall<Echo>({ text: '' });
    const second = new FakeUnaryCall<Echo>({ text: '' });
    handler(first, first.callback);
    handler(second, second.callback);
    first.cancel();
    second.cancel();
    failures[0].reject(new DOMException('This operation was aborted', 'AbortError'));
    failures[1].reject(new TypeError('undefined is not a function'));
    await settle();
    expect(first.replies).toEqual([]);
    expect(second.replies).toEqual([]);
    expect(lines).toHaveLength(1);
    expect((lines[0].err as { message: string }).message).toBe('undefined is not a function');
  });

  it('gives the domain the peer host without its port', async () => {
    const { logger } = captureLogger();
    const hosts: string[] = [];
    const handler = unaryHandler('/t/Echo', logger, async (_: Echo, ctx) => {
      hosts.push(ctx.clientHost);
      return { text: '' };
    });
    for (const peer of ['127.0.0.1:5000', '::1:5000', '[::ffff:10.0.0.1]:80']) {
      const call = new FakeUnaryCall<Echo>({ text: '' }, peer);
      handler(call, call.callback);
    }
    await settle();
    expect(hosts).toEqual(['127.0.0.1', '::1', '::ffff:10.0.0.1']);
  });

  describe('with a CallObserver', () => {
    /** Records what each call ended with; its marks count calls. */
    function recordingObserver(): { observer: CallObserver; ended: [number, ErrorCode | undefined][] } {
      let started = 0;
      const ended: [number, ErrorCode | undefined][] = [];
      return {
        ended,
        observer: {
          startCall: () => ++started,
          endCall: (mark, code) => void ended.push([mark, code]),
        },
      };
    }

    it("reports each call once, with its response's errorCode, a thrown CohortError's code or UNKNOWN_SERVER_ERROR", async () => {
      const { logger } = captureLogger('silent');
      const { observer, ended } = recordingObserver();
      const outcomes: (() => Promise<unknown>)[] = [
        async () => ({ errorCode: ErrorCode.REBALANCE_IN_PROGRESS }),
        async () => ({ topics: [] }),
        async () => {
          throw new CohortError(ErrorCode.INVALID_GROUP_ID);
        },
        async () => {
          throw new Error('bug');
        },
      ];
      let next = 0;
      const handler = unaryHandler('/t/Echo', logger, () => outcomes[next++](), observer);
      for (let i = 0; i < outcomes.length; i++) {
        const call = new FakeUnaryCall<Echo>({ text: '' });
        handler(call, call.callback);
        await settle();
      }
      const undecodable = new FakeUnaryCall<Echo>(new UndecodableRequest(new Error('bad bytes')));
      handler(undecodable, undecodable.callback);
      await settle();
      expect(ended).toEqual([
        [1, ErrorCode.REBALANCE_IN_PROGRESS],
        [2, ErrorCode.NONE],
        [3, ErrorCode.INVALID_GROUP_ID],
        [4, ErrorCode.UNKNOWN_SERVER_ERROR],
        [5, ErrorCode.INVALID_REQUEST],
      ]);
    });

    it('reports a call its client abandoned as ending without a code, and not again when the domain answers', async () => {
      const { logger } = captureLogger('silent');
      const { observer, ended } = recordingObserver();
      const answer = deferred<Echo>();
      const handler = unaryHandler('/t/Echo', logger, () => answer.promise, observer);
      const call = new FakeUnaryCall<Echo>({ text: '' });
      handler(call, call.callback);
      call.cancel();
      answer.resolve({ text: 'late' });
      await settle();
      expect(ended).toEqual([[1, undefined]]);
      expect(call.replies).toEqual([]);
    });
  });

  describe('with node authentication', () => {
    const SECRET = 'q7Hk2VtN9wXc4RzL0pB6mYs3JdF8aGe1';
    const asNode = (nodeId: number, auth = nodeAuthFor(SECRET, nodeId)): Metadata => {
      const metadata = new Metadata();
      metadata.set(NODE_ID_METADATA_KEY, String(nodeId));
      metadata.set(NODE_AUTH_METADATA_KEY, auth);
      return metadata;
    };

    function serve(): {
      handler: ReturnType<typeof unaryHandler<Echo, Echo>>;
      seen: (number | undefined)[];
      refused: string[];
      observed: number[];
    } {
      const { logger } = captureLogger();
      const seen: (number | undefined)[] = [];
      const refused: string[] = [];
      const observed: number[] = [];
      const observer: CallObserver = {
        startCall: () => observed.push(1),
        endCall: () => undefined,
      };
      const handler = unaryHandler(
        '/t/Echo',
        logger,
        async (request: Echo, context: RequestContext & BrokerRequestContext) => {
          seen.push(context.authenticatedNodeId);
          return request;
        },
        observer,
        {
          authenticator: new NodeCredentialsCheck(SECRET),
          onRefused: (method, reason) => refused.push(`${method}: ${reason}`),
        },
      );
      return { handler, seen, refused, observed };
    }

    it('hands the domain the node id the credentials prove', async () => {
      const { handler, seen } = serve();
      const call = new FakeUnaryCall<Echo, Echo>({ text: 'x' });
      call.metadata = asNode(2);
      handler(call, call.callback);
      await settle();
      expect(call.replies).toEqual([{ error: null, response: { text: 'x' } }]);
      expect(seen).toEqual([2]);
    });

    it('treats a call without node credentials as a client’s', async () => {
      const { handler, seen } = serve();
      const call = new FakeUnaryCall<Echo, Echo>({ text: 'x' });
      call.metadata = new Metadata();
      handler(call, call.callback);
      const bare = new FakeUnaryCall<Echo, Echo>({ text: 'y' });
      handler(bare, bare.callback);
      await settle();
      expect(seen).toEqual([undefined, undefined]);
    });

    it('ends a call with wrong node credentials with UNAUTHENTICATED, before the domain or the metrics see it', async () => {
      const { handler, seen, refused, observed } = serve();
      const call = new FakeUnaryCall<Echo, Echo>({ text: 'x' });
      call.metadata = asNode(2, nodeAuthFor(SECRET, 1));
      handler(call, call.callback);
      await settle();
      expect(call.replies).toEqual([
        { error: { code: status.UNAUTHENTICATED, details: WRONG_NODE_MESSAGE }, response: undefined },
      ]);
      expect(seen).toEqual([]);
      expect(observed).toEqual([]);
      expect(refused).toEqual([`/t/Echo: ${WRONG_NODE_MESSAGE}`]);
    });
  });
});

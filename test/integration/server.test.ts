import { credentials, Client, Metadata, status } from '@grpc/grpc-js';
import type { ClientReadableStream, GrpcObject, ServiceClientConstructor, ServiceError } from '@grpc/grpc-js';
import { CohortError, ErrorCode } from '../../src/errors';
import type { JoinGroupResponse, RequestContext } from '../../src/group/group-protocol';
import { ERROR_CODE_TRAILER, INTERNAL_ERROR_MESSAGE } from '../../src/server';
import { FakeGroupCoordinator } from '../support/fake-group-coordinator';
import {
  healthClient,
  listServicesByReflection,
  packageDefinitionByReflection,
} from '../support/grpc-clients';
import { openUnfinishedCall } from '../support/raw-http2';
import type { TestServer } from '../support/start-test-server';
import { startTestServer } from '../support/start-test-server';

const JOIN_ANSWER: JoinGroupResponse = {
  errorCode: ErrorCode.NONE,
  generationId: 1,
  protocolType: 'consumer',
  protocolName: 'range',
  leaderId: 'm-1',
  memberId: 'm-1',
  members: [],
  skipAssignment: false,
};

function rejection(promise: Promise<unknown>): Promise<ServiceError> {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: ServiceError) => error,
  );
}

/** Resolves when the caller of the call with this context goes away. */
function cancelled(context: RequestContext | undefined): Promise<void> {
  const onCancel = context?.onCancel?.bind(context);
  if (onCancel === undefined) return Promise.reject(new Error('the call cannot be cancelled'));
  return new Promise((resolve) => onCancel(resolve));
}

describe('the cohort server', () => {
  let t: TestServer | undefined;

  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('binds port 0 to a real port and serves the real group coordinator', async () => {
    t = await startTestServer();
    expect(t.port).toBeGreaterThan(0);
    const response = await t.groupCoordinator().listGroups({});
    expect(response).toEqual({ errorCode: ErrorCode.NONE, groups: [] });
  });

  it('does not serve TestClock without --manual-clock', async () => {
    t = await startTestServer();
    const error = await rejection(t.testClock().now({}));
    expect(error.code).toBe(status.UNIMPLEMENTED);
  });

  it('serves TestClock with --manual-clock: Advance moves the clock, Now reads it', async () => {
    t = await startTestServer({ manualClock: true });
    const clock = t.testClock();
    const start = (await clock.now({})).nowMs;
    expect(await clock.advance({ ms: 1_500 })).toEqual({ nowMs: start + 1_500 });
    expect(await clock.now({})).toEqual({ nowMs: start + 1_500 });
    expect(t.server.manualTime?.monotonicMs()).toBe(1_500);
  });

  it.each([-1, '9007199254740993'])('refuses TestClock.Advance(%p) with INVALID_ARGUMENT', async (ms) => {
    t = await startTestServer({ manualClock: true });
    const error = await rejection(t.testClock().advance({ ms }));
    expect(error.code).toBe(status.INVALID_ARGUMENT);
    expect(error.metadata.get(ERROR_CODE_TRAILER)).toEqual([String(ErrorCode.INVALID_REQUEST)]);
    expect(t.server.manualTime?.monotonicMs()).toBe(0);
  });

  it('answers INTERNAL with a generic message when the coordinator fails unexpectedly, and logs the stack', async () => {
    t = await startTestServer(
      {},
      {
        coordinatorFactory: () =>
          new FakeGroupCoordinator({
            heartbeat: async () => {
              throw new Error('members map of group g-7 is corrupt');
            },
          }),
      },
    );
    const error = await rejection(t.groupCoordinator().heartbeat({ groupId: 'g-7' }));
    expect(error.code).toBe(status.INTERNAL);
    expect(error.details).toBe(INTERNAL_ERROR_MESSAGE);
    expect(error.details).not.toContain('corrupt');
    const logged = t.logs.find((line) => line.msg === 'unexpected error while handling a call');
    expect(logged).toMatchObject({ level: 50, method: '/cohort.v1.GroupCoordinator/Heartbeat' });
    expect((logged?.err as { stack: string }).stack).toContain('members map of group g-7 is corrupt');
  });

  it('ends a call with the status of a thrown CohortError and its code in the trailer', async () => {
    t = await startTestServer(
      {},
      {
        coordinatorFactory: () =>
          new FakeGroupCoordinator({
            describeGroups: async () => {
              throw new CohortError(ErrorCode.INVALID_REQUEST, 'groups must not be empty');
            },
          }),
      },
    );
    const error = await rejection(t.groupCoordinator().describeGroups({ groups: [] }));
    expect(error.code).toBe(status.INVALID_ARGUMENT);
    expect(error.details).toBe('groups must not be empty');
    expect(error.metadata.get(ERROR_CODE_TRAILER)).toEqual([String(ErrorCode.INVALID_REQUEST)]);
  });

  it('answers INVALID_ARGUMENT to bytes that do not decode as the request', async () => {
    t = await startTestServer();
    const client = new Client(t.target, credentials.createInsecure());
    try {
      const error = await new Promise<ServiceError>((resolve, reject) =>
        client.makeUnaryRequest(
          '/cohort.v1.GroupCoordinator/Heartbeat',
          (bytes: Buffer) => bytes,
          (bytes: Buffer) => bytes,
          Buffer.from([0x0a, 0xff]),
          new Metadata(),
          {},
          (err) => (err !== null ? resolve(err) : reject(new Error('expected a failure'))),
        ),
      );
      expect(error.code).toBe(status.INVALID_ARGUMENT);
    } finally {
      client.close();
    }
  });

  it.each([
    // List's request has no fields: what breaks a `service` is an unknown field it skips.
    ['a length past the end', [0x0a, 0xff], ['Check', 'List']],
    ['a service that is not UTF-8', [0x0a, 0x02, 0xc3, 0x28], ['Check']],
    ['a service sent as a varint', [0x08, 0x01], ['Check']],
  ])(
    'answers a health request with %s INVALID_ARGUMENT (Watch too), and keeps serving',
    async (_what, bytes, methods) => {
      t = await startTestServer();
      const client = new Client(t.target, credentials.createInsecure());
      const health = healthClient(t.target);
      const identity = (b: Buffer): Buffer => b;
      const unary = (method: string): Promise<ServiceError> =>
        new Promise((resolve, reject) =>
          client.makeUnaryRequest(
            `/grpc.health.v1.Health/${method}`,
            identity,
            identity,
            Buffer.from(bytes),
            new Metadata(),
            {},
            (err) => (err !== null ? resolve(err) : reject(new Error('expected a failure'))),
          ),
        );
      try {
        for (const method of methods) {
          const error = await unary(method);
          expect(error.code).toBe(status.INVALID_ARGUMENT);
          expect(error.details).toMatch(
            /^the request is not a valid grpc\.health\.v1\.Health(Check|List)Request$/,
          );
        }
        const watch = client.makeServerStreamRequest(
          '/grpc.health.v1.Health/Watch',
          identity,
          identity,
          Buffer.from(bytes),
          new Metadata(),
        );
        watch.on('data', () => undefined);
        const watchError = await new Promise<ServiceError>((resolve) => watch.on('error', resolve));
        expect(watchError.code).toBe(status.INVALID_ARGUMENT);
        expect(await health.check('')).toBe('SERVING');
        expect(t.logs.filter((line) => line.level >= 50)).toEqual([]);
      } finally {
        client.close();
        health.close();
      }
    },
  );

  it('refuses an offset beyond 2^53 - 1 instead of committing a rounded one', async () => {
    const coordinator = new FakeGroupCoordinator({ offsetCommit: async () => ({ topics: [] }) });
    t = await startTestServer({}, { coordinatorFactory: () => coordinator });
    const error = await rejection(
      t.groupCoordinator().offsetCommit({
        groupId: 'g',
        generationId: -1,
        topics: [
          { name: 't', partitions: [{ partitionIndex: 0, committedOffset: '9007199254740993' as never }] },
        ],
      } as never),
    );
    expect(error.code).toBe(status.INVALID_ARGUMENT);
    expect(error.details).toContain('committed_offset (9007199254740993)');
    expect(coordinator.calls).toEqual([]);
  });

  it('aborts the parked work of a call its client cancels, and keeps serving', async () => {
    let parked: RequestContext | undefined;
    let arrived!: () => void;
    const joinArrived = new Promise<void>((resolve) => (arrived = resolve));
    const coordinator = new FakeGroupCoordinator({
      joinGroup: (_request, context) => {
        parked = context;
        arrived();
        return new Promise<JoinGroupResponse>(() => undefined);
      },
      heartbeat: async () => ({ errorCode: ErrorCode.NONE }),
    });
    t = await startTestServer({}, { coordinatorFactory: () => coordinator });
    const member = t.groupCoordinator();
    const controller = new AbortController();
    const join = rejection(member.joinGroup({ groupId: 'g' }, { signal: controller.signal }));
    await joinArrived;
    controller.abort();
    expect((await join).code).toBe(status.CANCELLED);
    await cancelled(parked);
    expect(await member.heartbeat({ groupId: 'g' })).toEqual({ errorCode: ErrorCode.NONE });
  });

  it('aborts the parked work of a call whose deadline passes, and drops the late answer', async () => {
    let answer: ((response: JoinGroupResponse) => void) | undefined;
    let parked: RequestContext | undefined;
    const coordinator = new FakeGroupCoordinator({
      joinGroup: (_request, context) => {
        parked = context;
        return new Promise<JoinGroupResponse>((resolve) => (answer = resolve));
      },
      listGroups: async () => ({ errorCode: ErrorCode.NONE, groups: [] }),
    });
    t = await startTestServer({}, { coordinatorFactory: () => coordinator });
    const member = t.groupCoordinator();
    const error = await rejection(member.joinGroup({ groupId: 'g' }, { deadlineMs: 200 }));
    expect(error.code).toBe(status.DEADLINE_EXCEEDED);
    await cancelled(parked);
    answer?.(JOIN_ANSWER);
    expect(await member.listGroups({})).toEqual({ errorCode: ErrorCode.NONE, groups: [] });
    expect(t.logs.filter((line) => line.level >= 50)).toEqual([]);
  });

  it('answers every parked call before it closes', async () => {
    const coordinator = new FakeGroupCoordinator({
      joinGroup: () =>
        new Promise<JoinGroupResponse>((resolve) =>
          coordinator.onShutdown(() =>
            resolve({ ...JOIN_ANSWER, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE }),
          ),
        ),
    });
    t = await startTestServer({}, { coordinatorFactory: () => coordinator });
    const member = t.groupCoordinator();
    const joins = [member.joinGroup({ groupId: 'a' }), member.joinGroup({ groupId: 'b' })];
    while (coordinator.calls.length < 2) await new Promise((resolve) => setImmediate(resolve));
    await t.server.close();
    const answers = await Promise.all(joins);
    expect(answers.map((a) => a.errorCode)).toEqual([
      ErrorCode.COORDINATOR_NOT_AVAILABLE,
      ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ]);
    expect(coordinator.shutdownCount).toBe(1);
  });

  it('lets a call in flight finish after close() has begun, while it closes the idle connections', async () => {
    let answer!: (response: JoinGroupResponse) => void;
    const coordinator = new FakeGroupCoordinator({
      joinGroup: () => new Promise<JoinGroupResponse>((resolve) => (answer = resolve)),
      listGroups: async () => ({ errorCode: ErrorCode.NONE, groups: [] }),
    });
    t = await startTestServer({}, { coordinatorFactory: () => coordinator, shutdownGraceMs: 600_000 });
    const idle = t.groupCoordinator();
    await idle.listGroups({});
    const join = t.groupCoordinator().joinGroup({ groupId: 'late' });
    while (coordinator.calls.length < 2) await new Promise((resolve) => setImmediate(resolve));
    const closing = t.server.close();
    // Several turns later, well after the drain has closed what it could.
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    answer(JOIN_ANSWER);
    expect(await join).toEqual(JOIN_ANSWER);
    await closing;
  });

  it('answers a JoinGroup parked in the real coordinator with COORDINATOR_NOT_AVAILABLE when it closes', async () => {
    t = await startTestServer({ manualClock: true });
    const member = t.groupCoordinator();
    const join = {
      groupId: 'closing-group',
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 60_000,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.from('m') }],
    };
    const first = await member.joinGroup(join);
    expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    // The group waits group.initial.rebalance.delay.ms, which the manual clock never reaches.
    const parked = member.joinGroup({ ...join, memberId: first.memberId });
    // A later call on the same connection is handled after the join, so the join is parked by now.
    await member.listGroups({});
    await t.server.close();
    expect((await parked).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });

  it('closes once however often close() is called', async () => {
    const coordinator = new FakeGroupCoordinator();
    t = await startTestServer({}, { coordinatorFactory: () => coordinator });
    await Promise.all([t.server.close(), t.server.close()]);
    await t.server.close();
    expect(coordinator.shutdownCount).toBe(1);
    await expect(t.server.start()).rejects.toThrow('the server is closed');
  });

  it('reports SERVING for the server and each service after start, and NOT_SERVING when it closes', async () => {
    t = await startTestServer({ manualClock: true });
    const health = healthClient(t.target);
    try {
      expect(await health.check('')).toBe('SERVING');
      expect(await health.check('cohort.v1.GroupCoordinator')).toBe('SERVING');
      expect(await health.check('cohort.v1.TestClock')).toBe('SERVING');
      expect(await health.check('cohort.v1.Broker')).toBe('SERVING');
      const watch = health.watch('');
      expect(await watch.next()).toBe('SERVING');
      const closed = t.server.close();
      expect(await watch.next()).toBe('NOT_SERVING');
      watch.cancel();
      await closed;
    } finally {
      health.close();
    }
  });

  it('cuts a call still open when the shutdown grace period ends', async () => {
    t = await startTestServer({}, { shutdownGraceMs: 100 });
    // A call whose request never finishes arriving: nothing on the server can answer it.
    const call = openUnfinishedCall(t.target, '/cohort.v1.GroupCoordinator/ListGroups');
    try {
      await call.ready;
      await t.server.close();
      await call.ended;
      expect(t.logs).toContainEqual(
        expect.objectContaining({
          msg: 'calls still open after the grace period; closing their connections',
        }),
      );
    } finally {
      call.close();
    }
  });

  it('on close ends every Watch stream with UNAVAILABLE after NOT_SERVING, without waiting for the grace period', async () => {
    // A grace period longer than the test's timeout: only a drain that ends the streams lets close() resolve.
    t = await startTestServer({}, { shutdownGraceMs: 600_000 });
    const health = healthClient(t.target);
    try {
      const raw = health.raw as unknown as {
        watch(request: { service: string }): ClientReadableStream<{ status: string }>;
      };
      const streams = ['', 'cohort.v1.GroupCoordinator'].map((service) => {
        const stream = raw.watch({ service });
        const statuses: string[] = [];
        stream.on('data', (message: { status: string }) => statuses.push(message.status));
        const ended = new Promise<ServiceError>((resolve) => stream.on('error', resolve));
        const first = new Promise((resolve) => stream.once('data', resolve));
        return { statuses, ended, first };
      });
      await Promise.all(streams.map((s) => s.first));
      await t.server.close();
      for (const stream of streams) {
        const error = await stream.ended;
        expect(error.code).toBe(status.UNAVAILABLE);
        expect(error.details).toBe('the server is shutting down');
        expect(stream.statuses).toEqual(['SERVING', 'NOT_SERVING']);
      }
      expect(t.logs.map((line) => line.msg)).not.toContain(
        'calls still open after the grace period; closing their connections',
      );
    } finally {
      health.close();
    }
  });

  it('lists through reflection exactly the services it serves', async () => {
    t = await startTestServer();
    expect(await listServicesByReflection(t.target)).toEqual([
      'cohort.v1.Broker',
      'cohort.v1.GroupCoordinator',
      'grpc.health.v1.Health',
    ]);
    await t.close();
    t = await startTestServer({ manualClock: true });
    expect(await listServicesByReflection(t.target)).toEqual([
      'cohort.v1.Broker',
      'cohort.v1.GroupCoordinator',
      'cohort.v1.TestClock',
      'grpc.health.v1.Health',
    ]);
  });

  it('describes the health service through reflection, so a client without its .proto can call Check', async () => {
    t = await startTestServer();
    const reflected = await packageDefinitionByReflection(t.target, 'grpc.health.v1.Health');
    const v1 = ((reflected.grpc as GrpcObject).health as GrpcObject).v1 as GrpcObject;
    const Health = v1.Health as ServiceClientConstructor;
    const client = new Health(t.target, credentials.createInsecure()) as unknown as Client & {
      check(
        request: { service: string },
        callback: (error: ServiceError | null, response: { status: string }) => void,
      ): void;
    };
    try {
      const answer = await new Promise<{ status: string }>((resolve, reject) =>
        client.check({ service: '' }, (error, response) =>
          error !== null ? reject(error) : resolve(response),
        ),
      );
      expect(answer.status).toBe('SERVING');
    } finally {
      client.close();
    }
  });
});

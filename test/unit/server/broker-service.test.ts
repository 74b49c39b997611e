import { ErrorCode } from '../../../src/errors';
import type { BrokerService, ProduceRequest, ProduceResponse } from '../../../src/log/broker-protocol';
import { brokerService } from '../../../src/server/broker-service';
import type { ProduceRequestWire } from '../../../src/server/broker-wire';
import { captureLogger } from '../../support/capture-logger';
import { FakeUnaryCall, settle, unaryOf } from './fake-unary-call';

const PRODUCED: ProduceResponse = {
  topics: [
    {
      name: 't',
      partitions: [
        {
          partitionIndex: 0,
          errorCode: ErrorCode.NONE,
          baseOffset: 7,
          logAppendTimeMs: 1,
          logStartOffset: 0,
        },
      ],
    },
  ],
};

function wire(acks: number, timestampMs: number | string = 0): ProduceRequestWire {
  return {
    acks,
    timeoutMs: 1_000,
    topics: [
      {
        name: 't',
        partitions: [
          {
            partitionIndex: 0,
            records: [
              {
                offset: 0,
                timestampMs,
                key: Buffer.alloc(0),
                value: Buffer.from('v'),
                headers: [],
                leaderEpoch: 0,
                valueNull: false,
              },
            ],
          },
        ],
      },
    ],
  };
}

/** A broker whose produce answers at once and records what it was given. */
function answeringBroker(received: ProduceRequest[]): BrokerService {
  const unused = (): never => {
    throw new Error('not used by this test');
  };
  return {
    createTopics: unused,
    metadata: unused,
    fetch: unused,
    listOffsets: unused,
    offsetForLeaderEpoch: unused,
    produce: (request) => {
      received.push(request);
      return Promise.resolve(PRODUCED);
    },
  };
}

/** How many event-loop turns pass before `call` is answered (0: within the current one). */
async function turnsUntilReply(call: FakeUnaryCall<unknown>): Promise<number> {
  for (let turn = 0; turn < 10; turn++) {
    await Promise.resolve();
    if (call.replies.length > 0) return turn;
    await settle();
  }
  throw new Error('no reply within 10 turns');
}

describe('brokerService Produce', () => {
  it('answers acks=1 and acks=-1 as soon as the broker does', async () => {
    for (const acks of [1, -1]) {
      const received: ProduceRequest[] = [];
      const service = brokerService(answeringBroker(received), captureLogger().logger);
      const call = new FakeUnaryCall<unknown>(wire(acks, 5));
      unaryOf(service, 'Produce')(call, call.callback);
      await settle();
      expect(call.replies).toEqual([{ error: null, response: PRODUCED }]);
      expect(received[0]!.topics[0]!.partitions[0]!.records[0]!.timestampMs).toBe(5);
    }
  });

  it('answers acks=0 two turns after acks=1, after the responses of the Fetches its append woke', async () => {
    const turns: number[] = [];
    for (const acks of [1, 0]) {
      const service = brokerService(answeringBroker([]), captureLogger().logger);
      const call = new FakeUnaryCall<unknown>(wire(acks));
      unaryOf(service, 'Produce')(call, call.callback);
      turns.push(await turnsUntilReply(call));
      expect(call.replies).toEqual([{ error: null, response: PRODUCED }]);
    }
    expect(turns[1]! - turns[0]!).toBe(2);
  });

  it('refuses a timestamp beyond 2^53 - 1 as INVALID_ARGUMENT without producing', async () => {
    const received: ProduceRequest[] = [];
    const service = brokerService(answeringBroker(received), captureLogger().logger);
    const call = new FakeUnaryCall<unknown>(wire(1, '9007199254740993'));
    unaryOf(service, 'Produce')(call, call.callback);
    await settle();
    expect(call.replies).toHaveLength(1);
    expect(call.replies[0]!.error?.code).toBe(3); // INVALID_ARGUMENT
    expect(call.replies[0]!.error?.details).toContain('timestamp_ms');
    expect(received).toEqual([]);
  });
});

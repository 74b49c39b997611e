import { CohortClient } from '../../../src/client/cohort-client';
import { ManualTime } from '../../../src/time';
import { InMemoryBroker } from './support/in-memory-broker';
import { flush, ScriptedTransport } from './support/scripted-transport';

function client(transport = new ScriptedTransport()) {
  let closedTransport = 0;
  const withClose = Object.assign(transport, { close: () => void closedTransport++ });
  const c = new CohortClient({
    address: 'unused',
    clientId: 'billing',
    transport: withClose,
    time: new ManualTime(),
  });
  return { c, transport, closedTransport: () => closedTransport };
}

describe('CohortClient', () => {
  it('joins with its client id on every member', async () => {
    const { c, transport } = client();
    const member = c.join({ groupId: 'g', topics: [] });
    await flush();
    expect(transport.callsOf('joinGroup')[0].request.clientId).toBe('billing');
    expect(member.state).toBe('stable');
    await c.close();
  });

  it('closes every open member, then the transport, once', async () => {
    const { c, transport, closedTransport } = client();
    const a = c.join({ groupId: 'a', topics: [] });
    const b = c.join({ groupId: 'b', topics: [] });
    await flush();
    await Promise.all([c.close(), c.close()]);
    expect([a.state, b.state]).toEqual(['closed', 'closed']);
    expect(transport.callsOf('leaveGroup')).toHaveLength(2);
    expect(closedTransport()).toBe(1);
  });

  it('waits for the server through its transport, and takes one without the method as reachable', async () => {
    const asked: number[] = [];
    const waiting = Object.assign(new ScriptedTransport(), {
      waitForServer: (timeoutMs: number) => {
        asked.push(timeoutMs);
        return Promise.reject(new Error('unreachable'));
      },
    });
    const { c } = client(waiting);
    await expect(c.waitForServer(1_500)).rejects.toThrow('unreachable');
    expect(asked).toEqual([1_500]);
    await expect(c.waitForServer(0)).rejects.toThrow(RangeError);
    await c.close();
    const plain = client();
    await expect(plain.c.waitForServer(1_000)).resolves.toBeUndefined();
    await plain.c.close();
  });

  it('refuses to join once closed', async () => {
    const { c } = client();
    await c.close();
    expect(() => c.join({ groupId: 'g', topics: [] })).toThrow(/closed/);
  });

  it('requires a client id', () => {
    expect(() => new CohortClient({ address: '127.0.0.1:7070', clientId: '' })).toThrow(/clientId/);
  });

  it('makes consumers, producers and an admin client only over a transport that has the Broker calls', () => {
    const { c } = client();
    expect(() => c.consumer({ groupId: 'g', topics: ['t'] })).toThrow(/Broker calls/);
    expect(() => c.producer()).toThrow(/Broker calls/);
    expect(() => c.admin()).toThrow(/DescribeGroups/);
  });

  it('closes its consumers (leaving their groups) and producers (sending what is queued), then the transport', async () => {
    const time = new ManualTime();
    const broker = new InMemoryBroker(time).addTopic('t', 1);
    const group = new ScriptedTransport();
    let closedTransport = 0;
    const transport = Object.assign(group, {
      createTopics: broker.createTopics.bind(broker),
      metadata: broker.metadata.bind(broker),
      produce: broker.produce.bind(broker),
      fetch: broker.fetch.bind(broker),
      listOffsets: broker.listOffsets.bind(broker),
      close: () => void closedTransport++,
    });
    const c = new CohortClient({ address: 'unused', clientId: 'billing', transport, time });
    const consumer = c.consumer({ groupId: 'g', topics: ['t'] });
    const running = consumer.run({ eachMessage: () => undefined });
    const producer = c.producer({ lingerMs: 60_000 });
    const sent = producer.send({ topic: 't', partition: 0, value: 'v' });
    await flush();
    expect(group.callsOf('joinGroup')[0].request.clientId).toBe('billing');
    await c.close();
    await expect(running).resolves.toBeUndefined();
    await expect(sent).resolves.toMatchObject({ offset: 0n });
    expect(group.callsOf('leaveGroup')).toHaveLength(1);
    expect(closedTransport).toBe(1);
    expect(() => c.consumer({ groupId: 'g', topics: ['t'] })).toThrow(/closed/);
  });
});

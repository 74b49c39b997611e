import { CohortClient } from '../../../src/client/cohort-client';
import { ManualTime } from '../../../src/time';
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

  it('refuses to join once closed', async () => {
    const { c } = client();
    await c.close();
    expect(() => c.join({ groupId: 'g', topics: [] })).toThrow(/closed/);
  });

  it('requires a client id', () => {
    expect(() => new CohortClient({ address: '127.0.0.1:7070', clientId: '' })).toThrow(/clientId/);
  });
});

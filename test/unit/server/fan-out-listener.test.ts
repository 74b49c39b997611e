import { fanOutListener } from '../../../src/server/fan-out-listener';

interface Listener {
  onA?(value: number): void;
  onB?(text: string, flag: boolean): void;
  onC?(): void;
}

describe('fanOutListener', () => {
  it('calls every listener that has a hook, in order, with the same arguments', () => {
    const calls: string[] = [];
    const combined = fanOutListener<Listener>([
      {
        onA: (value) => calls.push(`first a ${value}`),
        onB: (text, flag) => calls.push(`first b ${text} ${flag}`),
      },
      { onA: (value) => calls.push(`second a ${value}`) },
    ]);
    combined.onA?.(7);
    combined.onB?.('x', true);
    expect(calls).toEqual(['first a 7', 'second a 7', 'first b x true']);
  });

  it('leaves out a hook nobody has, so the caller can skip it', () => {
    const combined = fanOutListener<Listener>([{ onA: () => undefined }, {}]);
    expect(combined.onC).toBeUndefined();
    expect(Object.keys(combined)).toEqual(['onA']);
  });
});

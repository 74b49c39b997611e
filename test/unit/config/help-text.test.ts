import { CONFIG_SETTINGS, helpText } from '../../../src/config';

describe('helpText', () => {
  it('lists every flag with its environment twin and default', () => {
    const text = helpText();
    for (const spec of CONFIG_SETTINGS) {
      expect(text).toContain(spec.flag);
      expect(text).toContain(`env ${spec.env}, default ${String(spec.defaultValue)}`);
    }
  });

  it('keeps every line within 100 columns', () => {
    for (const line of helpText().split('\n')) expect(line.length).toBeLessThanOrEqual(100);
  });
});

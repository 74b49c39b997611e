import { CONFIG_SETTINGS, helpText } from '../../../src/config';

describe('helpText', () => {
  it('lists every flag with its environment twin and default', () => {
    const text = helpText();
    for (const spec of CONFIG_SETTINGS) {
      if (spec.isEnvOnly === true) {
        expect(text).toContain(`  ${spec.env}=${spec.valueName}\n      environment only (no flag)`);
        expect(text).not.toContain(`  ${spec.flag} `);
        continue;
      }
      expect(text).toContain(spec.flag);
      const shown = String(spec.defaultValue);
      expect(text).toContain(`env ${spec.env}, default ${shown === '' ? 'none' : shown}`);
    }
  });

  it('keeps every line within 100 columns', () => {
    for (const line of helpText().split('\n')) expect(line.length).toBeLessThanOrEqual(100);
  });
});

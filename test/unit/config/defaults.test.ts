import * as configDefaults from '../../../src/config/defaults';
import * as groupConfig from '../../../src/group/group-config';
import { CONFIG_SCHEMA } from '../../../src/config';

describe('configuration defaults', () => {
  // src/config may import nothing from src, so it repeats the group layer's defaults; this keeps them equal.
  it.each([
    'DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS',
    'DEFAULT_GROUP_MAX_SESSION_TIMEOUT_MS',
    'DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS',
    'DEFAULT_GROUP_MAX_SIZE',
    'DEFAULT_OFFSET_METADATA_MAX_BYTES',
    'DEFAULT_MAX_GROUPS',
    'DEFAULT_MEMBER_METADATA_MAX_BYTES',
    'DEFAULT_GROUP_MAX_METADATA_BYTES',
    'DEFAULT_GROUP_MAX_COMMITTED_PARTITIONS',
    'DEFAULT_OFFSETS_RETENTION_MINUTES',
    'DEFAULT_OFFSETS_RETENTION_CHECK_INTERVAL_MS',
  ] as const)('%s equals the group layer default of the same name', (name) => {
    expect(configDefaults[name]).toBe(groupConfig[name]);
  });

  it('gives every group setting the default the group layer would use', () => {
    for (const key of Object.keys(groupConfig.DEFAULT_GROUP_CONFIG) as (keyof groupConfig.GroupConfig)[]) {
      expect(CONFIG_SCHEMA[key].defaultValue).toBe(groupConfig.DEFAULT_GROUP_CONFIG[key]);
    }
  });

  it('uses the documented defaults for the process settings', () => {
    expect(CONFIG_SCHEMA.listen.defaultValue).toBe('127.0.0.1:7070');
    expect(CONFIG_SCHEMA.dataDir.defaultValue).toBe('./data');
    expect(CONFIG_SCHEMA.manualClock.defaultValue).toBe(false);
    expect(CONFIG_SCHEMA.logLevel.defaultValue).toBe('info');
  });
});

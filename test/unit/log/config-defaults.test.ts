import * as config from '../../../src/config';
import * as storage from '../../../src/log/storage';

describe('log defaults in src/config', () => {
  // src/config may import nothing from src, so it repeats the storage defaults; this keeps them equal.
  it.each([
    ['DEFAULT_LOG_FLUSH_MESSAGES', 'DEFAULT_FLUSH_MESSAGES'],
    ['DEFAULT_LOG_RETENTION_MS', 'DEFAULT_RETENTION_MS'],
    ['DEFAULT_LOG_RETENTION_BYTES', 'DEFAULT_RETENTION_BYTES'],
    ['DEFAULT_LOG_SEGMENT_BYTES', 'DEFAULT_SEGMENT_BYTES'],
  ] as const)('%s equals the storage default %s', (configName, storageName) => {
    expect(config[configName]).toBe(storage[storageName]);
  });

  it('says "never by time" for the flush interval, as storage does', () => {
    expect(config.DEFAULT_LOG_FLUSH_INTERVAL_MS).toBe(-1);
    expect(storage.DEFAULT_FLUSH_INTERVAL_MS).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('accepts no segment smaller than a record batch header', () => {
    expect(config.MIN_LOG_SEGMENT_BYTES).toBeGreaterThan(storage.RECORD_BATCH_HEADER_BYTES);
  });
});

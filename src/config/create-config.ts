import type { CohortConfig, ConfigKey } from './cohort-config';
import { CONFIG_SETTINGS } from './config-schema';
import { ADMIN_LISTEN_OFF, EMBEDDED_KAFKA_LISTEN } from './defaults';
import { InvalidConfigError } from './invalid-config-error';
import { REMOVED_SETTINGS, removedSettingProblem } from './removed-settings';
import type { ConfigSource } from './validate-config';
import { validateConfig } from './validate-config';

/**
 * What `createConfig` uses where the schema's default suits only a process of its own: a fixed admin port
 * would make the second of two servers embedded in one process (a test suite, a cluster in a test) fail to
 * start. An embedder that wants the admin listener asks for it, e.g. `adminListen: '127.0.0.1:0'`. The Kafka
 * listener stays on, on a free loopback port, for the same reason (`kafkaListen: 'off'` turns it off).
 */
const EMBEDDED_DEFAULTS: Partial<CohortConfig> = Object.freeze({
  adminListen: ADMIN_LISTEN_OFF,
  kafkaListen: EMBEDDED_KAFKA_LISTEN,
});

/**
 * The defaults with `overrides` applied, validated and frozen: how tests and embedders (the sidecar) build a
 * configuration without flags or environment. The one default that differs from the process's is
 * `adminListen`, off unless given (see EMBEDDED_DEFAULTS). Throws `InvalidConfigError` listing every problem.
 */
export function createConfig(overrides: Partial<CohortConfig> = {}): CohortConfig {
  const candidate = {} as Record<ConfigKey, unknown>;
  const sources = {} as Record<ConfigKey, ConfigSource>;
  for (const spec of CONFIG_SETTINGS) {
    const given =
      Object.prototype.hasOwnProperty.call(overrides, spec.key) && overrides[spec.key] !== undefined;
    const fallback = Object.prototype.hasOwnProperty.call(EMBEDDED_DEFAULTS, spec.key)
      ? EMBEDDED_DEFAULTS[spec.key]
      : spec.defaultValue;
    candidate[spec.key] = given ? overrides[spec.key] : fallback;
    sources[spec.key] = given ? 'override' : 'default';
  }
  const problems = Object.keys(overrides)
    .filter((key) => !CONFIG_SETTINGS.some((s) => s.key === key))
    .map((key) => {
      const removed = REMOVED_SETTINGS.find((s) => s.key === key);
      return removed === undefined ? `unknown setting ${key}` : removedSettingProblem(removed, key);
    });
  const validated = validateConfig(candidate, sources);
  if (validated.errors !== undefined) problems.push(...validated.errors);
  if (problems.length > 0 || validated.config === undefined) throw new InvalidConfigError(problems);
  return validated.config;
}

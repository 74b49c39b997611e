import type { CohortConfig, ConfigKey } from './cohort-config';
import { CONFIG_SETTINGS } from './config-schema';
import { InvalidConfigError } from './invalid-config-error';
import type { ConfigSource } from './validate-config';
import { validateConfig } from './validate-config';

/**
 * The defaults with `overrides` applied, validated and frozen: how tests and embedders (the sidecar) build a
 * configuration without flags or environment. Throws `InvalidConfigError` listing every problem.
 */
export function createConfig(overrides: Partial<CohortConfig> = {}): CohortConfig {
  const candidate = {} as Record<ConfigKey, unknown>;
  const sources = {} as Record<ConfigKey, ConfigSource>;
  for (const spec of CONFIG_SETTINGS) {
    const given =
      Object.prototype.hasOwnProperty.call(overrides, spec.key) && overrides[spec.key] !== undefined;
    candidate[spec.key] = given ? overrides[spec.key] : spec.defaultValue;
    sources[spec.key] = given ? 'override' : 'default';
  }
  const problems = Object.keys(overrides)
    .filter((key) => !CONFIG_SETTINGS.some((s) => s.key === key))
    .map((key) => `unknown setting ${key}`);
  const validated = validateConfig(candidate, sources);
  if (validated.errors !== undefined) problems.push(...validated.errors);
  if (problems.length > 0 || validated.config === undefined) throw new InvalidConfigError(problems);
  return validated.config;
}

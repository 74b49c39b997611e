import type { CohortConfig, ConfigKey } from './cohort-config';
import type { SettingSpec } from './config-schema';
import { CONFIG_SETTINGS } from './config-schema';
import { helpText } from './help-text';
import { parseSetting } from './parse-setting';
import { REMOVED_SETTINGS, removedSettingProblem } from './removed-settings';
import type { ConfigSource } from './validate-config';
import { validateConfig } from './validate-config';

export type LoadConfigResult =
  | { readonly config: CohortConfig; readonly warnings: readonly string[] }
  | { readonly errors: readonly string[] }
  | { readonly help: string };

const BY_FLAG = new Map<string, SettingSpec>(
  CONFIG_SETTINGS.filter((s) => s.isEnvOnly !== true).map((s) => [s.flag, s]),
);
/** Flags of environment-only settings: refused with a message that says where the value goes instead. */
const ENV_ONLY_BY_FLAG = new Map<string, SettingSpec>(
  CONFIG_SETTINGS.filter((s) => s.isEnvOnly === true).map((s) => [s.flag, s]),
);
const BY_ENV = new Map<string, SettingSpec>(CONFIG_SETTINGS.map((s) => [s.env, s]));
const REMOVED_BY_FLAG = new Map(REMOVED_SETTINGS.map((s) => [s.flag, s]));
const REMOVED_BY_ENV = new Map(REMOVED_SETTINGS.map((s) => [s.env, s]));
/** ' or give --token-file' for `token`: the file setting of an environment-only secret, when it has one. */
function fileAlternative(envOnly: SettingSpec): string {
  const file = CONFIG_SETTINGS.find((s) => s.key === `${envOnly.key}File` && s.kind === 'file');
  return file === undefined ? '' : ` or give ${file.flag}`;
}

const HELP_FLAGS = new Set(['--help', '-h']);

/** The closest known name, if it is a likely typo of `name`. */
function suggest(name: string, known: Iterable<string>): string {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best !== undefined && bestDistance <= 3 ? `; did you mean ${best}?` : '';
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j] + 1, current[j - 1] + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length];
}

/**
 * Reads the configuration from command-line flags and `COHORT_*` environment variables; flags win over the
 * environment, which wins over the defaults. Pure: `main.ts` passes `process.argv.slice(2)` and
 * `process.env`, tests pass literals.
 *
 * Flags: `--name value` or `--name=value`; a boolean flag alone means true (`--manual-clock`), or takes
 * `=true|false` (`--manual-clock` also `=running`). An empty environment variable counts as unset (orchestrators often pass `VAR=`).
 * Every problem is reported at once; unknown `COHORT_*` variables are warnings, not errors, because the
 * environment is shared with other programs. A removed setting (REMOVED_SETTINGS), as a flag or a
 * non-empty variable, is an error that says what replaced it.
 */
export function loadConfig(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): LoadConfigResult {
  if (argv.some((arg) => HELP_FLAGS.has(arg))) return { help: helpText() };

  const errors: string[] = [];
  const warnings: string[] = [];
  const fromFlags = new Map<ConfigKey, string>();

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') continue;
    if (!arg.startsWith('--')) {
      errors.push(`unexpected argument '${arg}': settings are given as --name value (see --help)`);
      continue;
    }
    const equals = arg.indexOf('=');
    const flag = equals === -1 ? arg : arg.slice(0, equals);
    const spec = BY_FLAG.get(flag);
    const envOnly = ENV_ONLY_BY_FLAG.get(flag);
    const removed = REMOVED_BY_FLAG.get(flag);
    if (spec === undefined) {
      errors.push(
        envOnly !== undefined
          ? `${flag} is not accepted on the command line, which every user of the machine can read; ` +
              `set ${envOnly.env} in the environment${fileAlternative(envOnly)}`
          : removed !== undefined
            ? removedSettingProblem(removed, flag)
            : `unknown flag ${flag}${suggest(flag, [...BY_FLAG.keys(), '--help'])}`,
      );
      // Its value, if it has one, is not a stray argument: one mistake, one message.
      if (equals === -1 && i + 1 < argv.length && !argv[i + 1].startsWith('--')) i++;
      continue;
    }
    let text: string;
    if (equals !== -1) {
      text = arg.slice(equals + 1);
    } else if (spec.kind === 'boolean' || spec.kind === 'clockMode') {
      text = 'true';
    } else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) {
      text = argv[++i];
    } else {
      errors.push(`${flag} needs a value, e.g. ${flag} ${String(spec.defaultValue)}`);
      continue;
    }
    const earlier = fromFlags.get(spec.key);
    if (earlier !== undefined) {
      errors.push(`${flag} is given twice ('${earlier}' and '${text}'); give it once`);
      continue;
    }
    fromFlags.set(spec.key, text);
  }

  for (const name of Object.keys(env)) {
    const removed = REMOVED_BY_ENV.get(name);
    if (removed !== undefined) {
      // An error, not the warning of an unknown variable: the role it asked for would silently not be taken.
      if (env[name] !== undefined && env[name] !== '') errors.push(removedSettingProblem(removed, name));
      continue;
    }
    if (name.startsWith('COHORT_') && !BY_ENV.has(name)) {
      warnings.push(`ignoring unknown environment variable ${name}${suggest(name, BY_ENV.keys())}`);
    }
  }

  const candidate = {} as Record<ConfigKey, unknown>;
  const sources = {} as Record<ConfigKey, ConfigSource>;
  for (const spec of CONFIG_SETTINGS) {
    const flagText = fromFlags.get(spec.key);
    const envText = env[spec.env];
    let text: string | undefined;
    let source: ConfigSource;
    if (flagText !== undefined) {
      text = flagText;
      source = 'flag';
    } else if (envText !== undefined && envText !== '') {
      text = envText;
      source = 'env';
    } else {
      source = 'default';
    }
    sources[spec.key] = source;
    if (text === undefined) {
      candidate[spec.key] = spec.defaultValue;
      continue;
    }
    const parsed = parseSetting(spec, text);
    if (parsed.ok) {
      candidate[spec.key] = parsed.value;
    } else {
      errors.push(`${source === 'flag' ? spec.flag : spec.env} ${parsed.reason}`);
      // Keep validating the other settings against the default, so relations between settings that
      // parsed do not report a phantom problem for this one.
      candidate[spec.key] = spec.defaultValue;
      sources[spec.key] = 'default';
    }
  }

  const validated = validateConfig(candidate, sources);
  if (validated.errors !== undefined) errors.push(...validated.errors);
  if (errors.length > 0 || validated.config === undefined) return { errors };
  return { config: validated.config, warnings };
}

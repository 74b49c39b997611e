import { parseArgs } from 'node:util';
import { UsageError } from './usage-error';

/** One flag of a command. */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  readonly multiple?: boolean;
  /** How the help shows the value: `--partitions N`. */
  readonly valueName?: string;
  readonly description: string;
}

/** A command: what it is called, what it does, what it takes. */
export interface CommandSpec {
  /** `cohort groups describe GROUP...`: the first line of the help. */
  readonly usage: string;
  readonly description: string;
  readonly options: Readonly<Record<string, OptionSpec>>;
  /** How many positional arguments it takes. */
  readonly positionals: { readonly min: number; readonly max: number };
  /** More lines for the help (examples). */
  readonly footer?: string;
}

/** A parsed command line. */
export interface CommandLine {
  readonly values: Readonly<Record<string, string | boolean | (string | boolean)[] | undefined>>;
  readonly positionals: readonly string[];
}

/** Flags every command takes. */
export const HELP_OPTION: Readonly<Record<string, OptionSpec>> = {
  help: { type: 'boolean', short: 'h', description: 'show this help and exit' },
};

/**
 * Parses `args` against `spec`; null when `--help` was asked for (the caller prints `helpText(spec)`).
 * Throws a UsageError naming the problem: an unknown flag, a missing value, too few or too many arguments.
 */
export function parseCommandLine(spec: CommandSpec, args: readonly string[]): CommandLine | null {
  const options = { ...spec.options, ...HELP_OPTION };
  let parsed;
  try {
    parsed = parseArgs({
      args: attachNegativeValues(options, args),
      options: Object.fromEntries(
        Object.entries(options).map(([name, o]) => [
          name,
          { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) },
        ]),
      ),
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    // node:util's messages name the flag ("Unknown option '--nope'"); keep the first sentence.
    const text = (error as { message?: unknown }).message;
    const message = typeof text === 'string' ? text.split('. ')[0] : String(error);
    throw new UsageError(message.replace(/\.$/, ''), usageOf(spec));
  }
  if (parsed.values.help === true) return null;
  const count = parsed.positionals.length;
  const { min, max } = spec.positionals;
  if (count < min) throw new UsageError(`missing argument${min - count > 1 ? 's' : ''}`, usageOf(spec));
  if (count > max) {
    throw new UsageError(`unexpected argument '${parsed.positionals[max]}'`, usageOf(spec));
  }
  return { values: parsed.values, positionals: parsed.positionals };
}

const NEGATIVE_NUMBER = /^-\d+(\.\d+)?$/;

/**
 * `--acks -1` as `--acks=-1`. node:util's parseArgs refuses a value that starts with a dash after a flag
 * that takes one ("argument is ambiguous"), to catch a forgotten value; a negative number is never a flag
 * here (no flag is a digit), so it is the flag's value.
 */
function attachNegativeValues(
  options: Readonly<Record<string, OptionSpec>>,
  args: readonly string[],
): string[] {
  const takesValue = (arg: string): string | undefined => {
    if (arg.startsWith('--')) {
      const name = arg.slice(2);
      return options[name]?.type === 'string' ? arg : undefined;
    }
    if (/^-[A-Za-z]$/.test(arg)) {
      const entry = Object.entries(options).find(([, o]) => o.short === arg.slice(1));
      return entry !== undefined && entry[1].type === 'string' ? `--${entry[0]}` : undefined;
    }
    return undefined;
  };
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--') {
      out.push(...args.slice(i));
      break;
    }
    const flag = takesValue(arg);
    const next = args[i + 1];
    if (flag !== undefined && next !== undefined && NEGATIVE_NUMBER.test(next)) {
      out.push(`${flag}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

/** The short usage printed after a usage error. */
export function usageOf(spec: CommandSpec): string {
  return `usage: ${spec.usage}\nRun with --help for every option.`;
}

/** The full help of a command. */
export function helpText(spec: CommandSpec): string {
  const options = { ...spec.options, ...HELP_OPTION };
  const rows = Object.entries(options).map(([name, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : ''}--${name}${o.type === 'string' ? ` ${o.valueName ?? 'VALUE'}` : ''}`;
    return [flag, o.description + (o.multiple ? ' (repeatable)' : '')];
  });
  const width = Math.max(...rows.map(([flag]) => flag.length));
  const lines = [
    `usage: ${spec.usage}`,
    '',
    spec.description,
    '',
    'options:',
    ...rows.map(([flag, text]) => `  ${flag.padEnd(width)}  ${text}`),
  ];
  if (spec.footer !== undefined) lines.push('', spec.footer);
  return `${lines.join('\n')}\n`;
}

/** A whole-number flag within [min, max], or `fallback` when absent. */
export function integerOption(
  line: CommandLine,
  spec: CommandSpec,
  name: string,
  fallback: number | undefined,
  range: { min: number; max: number },
): number | undefined {
  const raw = line.values[name];
  if (raw === undefined) return fallback;
  const value = typeof raw === 'string' && /^-?\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < range.min || value > range.max) {
    throw new UsageError(
      `--${name} must be a whole number between ${range.min} and ${range.max}, got '${String(raw)}'`,
      usageOf(spec),
    );
  }
  return value;
}

/** A string flag, or undefined. */
export function stringOption(line: CommandLine, name: string): string | undefined {
  const raw = line.values[name];
  return typeof raw === 'string' ? raw : undefined;
}

import { helpText, integerOption, parseCommandLine, type CommandSpec } from '../../../src/cli/command-line';
import { UsageError } from '../../../src/cli/usage-error';

const spec: CommandSpec = {
  usage: 'cohort things make NAME [--count N]',
  description: 'Makes things.',
  options: {
    count: { type: 'string', valueName: 'N', description: 'how many' },
    loud: { type: 'boolean', short: 'l', description: 'say so' },
    tag: { type: 'string', multiple: true, description: 'a tag' },
  },
  positionals: { min: 1, max: 1 },
  footer: 'example:\n  cohort things make x',
};

function usageError(args: string[]): UsageError {
  try {
    parseCommandLine(spec, args);
  } catch (error) {
    if (error instanceof UsageError) return error;
  }
  throw new Error(`no usage error for ${args.join(' ')}`);
}

describe('the command-line parser', () => {
  it('reads flags, repeated flags, short flags and positionals', () => {
    const line = parseCommandLine(spec, ['x', '--count', '3', '-l', '--tag', 'a', '--tag=b']);
    expect(line).toEqual({ values: { count: '3', loud: true, tag: ['a', 'b'] }, positionals: ['x'] });
    expect(integerOption(line!, spec, 'count', undefined, { min: 1, max: 5 })).toBe(3);
  });

  it('answers --help with null, whatever else is on the line', () => {
    expect(parseCommandLine(spec, ['--help'])).toBeNull();
    expect(parseCommandLine(spec, ['-h', '--count', '2'])).toBeNull();
  });

  it('refuses an unknown flag, a missing value, a missing or an extra argument, with the usage', () => {
    expect(usageError(['x', '--nope']).message).toMatch(/--nope/);
    expect(usageError(['x', '--count']).message).toMatch(/--count/);
    expect(usageError([]).message).toBe('missing argument');
    expect(usageError(['x', 'y']).message).toBe("unexpected argument 'y'");
    expect(usageError(['x', 'y']).usage).toMatch(/^usage: cohort things make NAME/);
  });

  it('takes a negative number as the value of the flag before it, long or short', () => {
    const wide: CommandSpec = {
      ...spec,
      options: { ...spec.options, offset: { type: 'string', short: 'o', description: 'an offset' } },
    };
    expect(parseCommandLine(wide, ['x', '--count', '-1', '-o', '-25', '--tag', '-3'])).toEqual({
      values: { count: '-1', offset: '-25', tag: ['-3'] },
      positionals: ['x'],
    });
    const line = parseCommandLine(wide, ['x', '--count', '-1'])!;
    expect(integerOption(line, wide, 'count', undefined, { min: -1, max: 1 })).toBe(-1);
    // After --, a negative number is a positional; a flag after a flag that wants a value is still refused.
    expect(parseCommandLine(wide, ['--count', '2', '--', '-5'])?.positionals).toEqual(['-5']);
    expect(usageError(['x', '--count', '--loud']).message).toMatch(/--count/);
  });

  it('checks whole-number flags against their range', () => {
    for (const bad of ['0', '6', '1.5', 'three', '-']) {
      const line = parseCommandLine(spec, ['x', '--count', bad])!;
      expect(() => integerOption(line, spec, 'count', undefined, { min: 1, max: 5 })).toThrow(
        /--count must be a whole number between 1 and 5/,
      );
    }
    expect(integerOption(parseCommandLine(spec, ['x'])!, spec, 'count', 4, { min: 1, max: 5 })).toBe(4);
  });

  it('lists every flag in the help, with --help itself and the footer', () => {
    const help = helpText(spec);
    expect(help).toMatch(/^usage: cohort things make NAME \[--count N\]\n\nMakes things\.\n/);
    expect(help).toContain('--count N');
    expect(help).toContain('-l, --loud');
    expect(help).toContain('a tag (repeatable)');
    expect(help).toContain('-h, --help');
    expect(help.trimEnd().endsWith('cohort things make x')).toBe(true);
  });
});

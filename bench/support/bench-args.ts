/**
 * The command-line options every bench takes the same way: `--name=value` only (npm passes what follows
 * `--`), `--rounds=N`, and `--only=a,b` naming the bench's sections. A value out of range throws, naming it.
 */

/** The value of `--name=value`, or undefined when absent. */
export function argValue(name: string): string | undefined {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  return arg?.slice(name.length + 3);
}

/** `--rounds=N` (N ≥ 1), or `fallback`. */
export function readRounds(fallback: number): number {
  const arg = argValue('rounds');
  const rounds = arg === undefined ? fallback : Number(arg);
  if (!Number.isSafeInteger(rounds) || rounds < 1) throw new RangeError(`--rounds must be >= 1, got ${arg}`);
  return rounds;
}

/** The sections `--only=a,b` names, each one of `sections`; every section without it. */
export function readOnly<S extends string>(sections: readonly S[]): Set<S> {
  const arg = argValue('only');
  const only = arg === undefined ? [...sections] : arg.split(',');
  for (const name of only) {
    if (!(sections as readonly string[]).includes(name)) {
      throw new RangeError(`--only takes ${sections.join(',')}, got ${name}`);
    }
  }
  return new Set(only as S[]);
}

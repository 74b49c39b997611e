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
  return readList('only', sections);
}

/** The items `--name=a,b` lists, each one of `items`; every item without it. */
export function readList<S extends string>(name: string, items: readonly S[]): Set<S> {
  const arg = argValue(name);
  const listed = arg === undefined ? [...items] : arg.split(',');
  for (const item of listed) {
    if (!(items as readonly string[]).includes(item)) {
      throw new RangeError(`--${name} takes ${items.join(',')}, got ${item}`);
    }
  }
  return new Set(listed as S[]);
}

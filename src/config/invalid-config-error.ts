/** Every problem found in a configuration, thrown by `createConfig`; `loadConfig` returns them instead. */
export class InvalidConfigError extends Error {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'InvalidConfigError';
    this.problems = Object.freeze([...problems]);
  }
}

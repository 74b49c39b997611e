/* global process */
/**
 * Loads .ts files the way ts-node/register/transpile-only does (TypeScript's transpileModule, no type
 * check): `npm start`, `npm run cli`, `npm run demo`, the benchmarks' server processes and the processes
 * tests spawn run through it.
 * Why not ts-node: ts-node loads Node's REPL, which loads the `domain` module, and once `domain` is loaded
 * every EventEmitter takes a slower path (constructing one, adding a listener and emitting costs 301 ns
 * instead of 55 ns on the bench machine). grpc-js creates several per call; a compiled cohort
 * (`node dist/src/main.js`) never loads `domain`, and neither should the server `npm start` runs.
 * Tests run through ts-jest; ts-node stays for tools that want its type-checking mode.
 *
 * Transpiled output is cached on disk, keyed by a hash of the source, the compiler options and the
 * TypeScript version, so only a changed file is transpiled again. Without the cache every start loads
 * the compiler and transpiles all of src/ (4 s on an idle 2-core machine, 12 s under a test run's load;
 * a cluster test starts a dozen nodes). The cache lives in node_modules/.cache/cohort-ts (what `npm ci`
 * removes) and is written by rename, so processes starting side by side never read a half-written entry.
 * COHORT_TS_CACHE=0 turns it off.
 */
const { createHash } = require('node:crypto');
const { mkdirSync, readFileSync, renameSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const compilerOptions = {
  module: 'CommonJS',
  target: 'ES2022',
  esModuleInterop: true,
  inlineSourceMap: true,
};

const CACHE_DIR =
  process.env.COHORT_TS_CACHE === '0'
    ? undefined
    : join(__dirname, '..', 'node_modules', '.cache', 'cohort-ts');
const CACHE_SALT = `${require('typescript/package.json').version}\0${JSON.stringify(compilerOptions)}\0`;

let ts;
function transpile(source, filename) {
  ts ??= require('typescript');
  return ts.transpileModule(source, { compilerOptions, fileName: filename }).outputText;
}

function cachedTranspile(source, filename) {
  if (CACHE_DIR === undefined) return transpile(source, filename);
  // The file name is part of the key: the inline source map names it.
  const key = createHash('sha256')
    .update(CACHE_SALT)
    .update(filename)
    .update('\0')
    .update(source)
    .digest('hex');
  const entry = join(CACHE_DIR, `${key}.js`);
  try {
    return readFileSync(entry, 'utf8');
  } catch {
    // Not cached yet.
  }
  const output = transpile(source, filename);
  try {
    mkdirSync(CACHE_DIR, { recursive: true });
    const temporary = `${entry}.${process.pid}.tmp`;
    writeFileSync(temporary, output);
    renameSync(temporary, entry);
  } catch {
    // A read-only or full disk only costs the next start its transpile.
  }
  return output;
}

require.extensions['.ts'] = (module, filename) => {
  module._compile(cachedTranspile(readFileSync(filename, 'utf8'), filename), filename);
};

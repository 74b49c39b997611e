/**
 * Loads .ts files the way ts-node/register/transpile-only does (TypeScript's transpileModule, no type
 * check), for the bench's child processes. Why not ts-node there: ts-node loads Node's REPL, which loads
 * the `domain` module, and once `domain` is loaded every EventEmitter construction and emit takes a slower
 * path. The servers under test must not pay that (a compiled cohort never loads `domain`).
 */
const { readFileSync } = require('node:fs');
const ts = require('typescript');

const compilerOptions = {
  module: ts.ModuleKind.CommonJS,
  target: ts.ScriptTarget.ES2022,
  esModuleInterop: true,
  inlineSourceMap: true,
};

require.extensions['.ts'] = (module, filename) => {
  const { outputText } = ts.transpileModule(readFileSync(filename, 'utf8'), {
    compilerOptions,
    fileName: filename,
  });
  module._compile(outputText, filename);
};

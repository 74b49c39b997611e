/**
 * Loads .ts files the way ts-node/register/transpile-only does (TypeScript's transpileModule, no type
 * check): `npm start`, `npm run cli`, `npm run demo` and the benchmarks' server processes run through it.
 * Why not ts-node: ts-node loads Node's REPL, which loads the `domain` module, and once `domain` is loaded
 * every EventEmitter takes a slower path (constructing one, adding a listener and emitting costs 301 ns
 * instead of 55 ns on the bench machine). grpc-js creates several per call; a compiled cohort
 * (`node dist/src/main.js`) never loads `domain`, and neither should the server `npm start` runs.
 * Tests run through ts-jest; ts-node stays for tools that want its type-checking mode.
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

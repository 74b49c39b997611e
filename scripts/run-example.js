/* global process, console */
/**
 * Runs one of examples/*.ts as it is written, `import ... from 'cohort'` included: `npm run example --
 * examples/sdk-in-ten-lines.ts`. Inside this repository 'cohort' is the source, src/index.ts, so an example
 * always runs against the code beside it (no build needed); in your own project the same import resolves to
 * the installed package (docs/sdk.md, "Using it from your own project"). test/integration/examples.test.ts
 * runs every example this way against a real server.
 */
const Module = require('node:module');
const path = require('node:path');
require('./register-typescript');

// test/integration/examples.test.ts points this at a transpiled copy of src/, which loads in a fraction of
// the time that transpiling src/ on the fly takes.
const ENTRY_POINT = process.env.EXAMPLE_COHORT_ENTRY_POINT ?? path.join(__dirname, '..', 'src', 'index.ts');
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return resolveFilename.call(this, request === 'cohort' ? ENTRY_POINT : request, ...rest);
};

const [example, ...args] = process.argv.slice(2);
if (example === undefined) {
  console.error('usage: npm run example -- examples/NAME.ts');
  process.exit(2);
}
process.argv = [process.argv[0], path.resolve(example), ...args];
require(path.resolve(example));

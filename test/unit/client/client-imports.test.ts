import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const CLIENT = resolve(__dirname, '..', '..', '..', 'src', 'client');
const SRC = resolve(CLIENT, '..');
/**
 * What the SDK may import from the rest of src: the clocks, the error table and the shared protocol
 * messages, nothing server-side.
 */
const ALLOWED_SRC = new Set(['time', 'errors', 'protocol']);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('the client layer', () => {
  it.each(files(CLIENT).map((f) => [relative(CLIENT, f), f]))(
    '%s imports only src/time, src/errors, src/protocol, itself, node and packages',
    (_name, file) => {
      const source = readFileSync(file, 'utf8');
      const specifiers = [...source.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1]);
      for (const specifier of specifiers) {
        if (!specifier.startsWith('.')) continue;
        const target = resolve(file, '..', specifier);
        if (target.startsWith(CLIENT)) continue;
        const layer = relative(SRC, target).split('/')[0];
        expect({ specifier, allowed: ALLOWED_SRC.has(layer) }).toEqual({ specifier, allowed: true });
      }
    },
  );
});

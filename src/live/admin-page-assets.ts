import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** One static file of the admin page. */
export interface AdminPageAsset {
  readonly contentType: string;
  readonly body: Buffer;
}

const PAGE_FILES: readonly (readonly [string, string, string])[] = [
  ['/', 'index.html', 'text/html; charset=utf-8'],
  ['/assets/page.js', 'page.js', 'text/javascript; charset=utf-8'],
  ['/assets/page.css', 'page.css', 'text/css; charset=utf-8'],
];

/** uPlot (the lag chart) is served from its npm package, as shipped: no build step. */
const UPLOT_FILES: readonly (readonly [string, string, string])[] = [
  ['/assets/uPlot.iife.min.js', 'uplot/dist/uPlot.iife.min.js', 'text/javascript; charset=utf-8'],
  ['/assets/uPlot.min.css', 'uplot/dist/uPlot.min.css', 'text/css; charset=utf-8'],
];

/**
 * The directory of the page's files, `static/admin` at the package's root: two levels above this file
 * when run from src/ (ts-node), three from dist/src/ (the package).
 */
function pageDirectory(): string {
  let dir = __dirname;
  for (let i = 0; i < 4; i++) {
    const candidate = join(dir, 'static', 'admin');
    if (existsSync(join(candidate, 'index.html'))) return candidate;
    dir = dirname(dir);
  }
  throw new Error(`the admin page's files (static/admin) are missing from the package near ${__dirname}`);
}

/**
 * Reads the admin page's static files (the page, its script and stylesheet, uPlot) into memory, keyed by
 * the path they are served at. They hold no data: every group, member and offset arrives over the
 * token-checked stream.
 */
export function loadAdminPageAssets(): ReadonlyMap<string, AdminPageAsset> {
  const dir = pageDirectory();
  const assets = new Map<string, AdminPageAsset>();
  for (const [path, file, contentType] of PAGE_FILES)
    assets.set(path, { contentType, body: readFileSync(join(dir, file)) });
  for (const [path, module, contentType] of UPLOT_FILES)
    assets.set(path, { contentType, body: readFileSync(require.resolve(module)) });
  return assets;
}

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/**
 * The dependency matrix of STYLE.md, checked against every import under src/. Arrows point one way:
 * a layer may import only the layers listed for it (and itself). Files directly in src/ (main.ts, an
 * index) are the top and may import anything.
 */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  time: [],
  errors: [],
  config: [],
  // The group protocol's messages, shared by the coordinator and the SDK.
  protocol: ['errors'],
  timer: ['time'],
  purgatory: ['timer', 'time'],
  log: ['purgatory', 'timer', 'time', 'errors'],
  group: ['purgatory', 'timer', 'time', 'errors', 'protocol'],
  // Node session, controller, partition state: the only code that talks to etcd. It tells the log and
  // group layers who leads at which epoch, through their interfaces; they never import it.
  cluster: ['time', 'errors', 'config', 'timer', 'purgatory', 'log', 'group'],
  // The gRPC door, and the composition root (create-server.ts) that builds both doors.
  server: [
    'time',
    'errors',
    'config',
    'timer',
    'purgatory',
    'log',
    'group',
    'protocol',
    'cluster',
    'kafka',
    'live',
  ],
  // The live page's model (the board), served by the admin listener: it reads the group, log and cluster
  // interfaces, and never the gRPC door (what it needs from other nodes arrives through an interface it
  // declares: GroupBoardOptions.remoteGroups, which the door's ClusterGroupFeed fills over grpc-js).
  live: ['time', 'errors', 'config', 'timer', 'purgatory', 'log', 'group', 'protocol', 'cluster'],
  // The Kafka door, a sibling of the gRPC one: the same core, never the gRPC door itself (nor gRPC).
  kafka: ['time', 'errors', 'config', 'timer', 'purgatory', 'log', 'group', 'protocol', 'cluster'],
  // The SDK runs in users' processes: it may share the clock, timer and error codes, nothing server-side.
  client: ['time', 'timer', 'errors', 'protocol'],
  // The `cohort` CLI is an SDK user; `cohort serve` runs the server as a separate program (main.ts).
  cli: ['client', 'errors', 'time'],
  // `npm run demo`: SDK clients around an embedded server (startServer), as a user's test suite has them.
  demo: ['client', 'server', 'errors', 'time'],
};

/**
 * Only the transport layers may know gRPC; the domain below them must not. The cluster layer is etcd's
 * gRPC client (src/cluster/etcd-metadata-store.ts), as the SDK is cohort's.
 */
const GRPC_LAYERS = new Set(['server', 'client', 'cluster']);
/** Only the cluster layer talks to etcd, whatever client it uses. */
const ETCD_CLIENT = /^etcd3$|proto\/etcd\//;

const SRC = resolve(__dirname, '../../../src');

interface ImportSite {
  /** Path relative to src/, with forward slashes. */
  readonly file: string;
  readonly specifier: string;
}

const IMPORT_PATTERNS = [
  /\bimport\s+(?:type\s+)?(?:[\w*{}\s,$]+\s+from\s+)?['"]([^'"]+)['"]/g,
  /\bexport\s+(?:type\s+)?(?:\*(?:\s+as\s+\w+)?|\{[^}]*\})\s+from\s+['"]([^'"]+)['"]/g,
  /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
  /\brequire\(\s*['"]([^'"]+)['"]\s*\)/g,
];

function importSpecifiers(source: string): string[] {
  // Comments may mention imports ("import { x } from '../y'" in an example); they do not count.
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"])\/\/.*$/gm, '$1');
  const found: string[] = [];
  for (const pattern of IMPORT_PATTERNS) {
    for (const match of code.matchAll(pattern)) found.push(match[1]);
  }
  return found;
}

function layerOf(srcRelativePath: string): string | undefined {
  const parts = srcRelativePath.split('/');
  return parts.length > 1 ? parts[0] : undefined;
}

/** Every rule an import breaks, as a sentence; empty when all is well. */
function violations(sites: readonly ImportSite[]): string[] {
  const problems: string[] = [];
  for (const { file, specifier } of sites) {
    const from = layerOf(file);
    if (from !== undefined && !(from in ALLOWED)) {
      problems.push(`${file}: src/${from} is not in the dependency matrix; add it to STYLE.md and this test`);
      continue;
    }
    if (specifier.startsWith('.')) {
      const target = relative(SRC, resolve(SRC, dirname(file), specifier))
        .split(sep)
        .join('/');
      if (target.startsWith('..')) {
        problems.push(`${file}: imports '${specifier}', outside src/`);
        continue;
      }
      const to = layerOf(target.includes('/') ? target : `${target}/`) ?? target;
      if (from === undefined || to === from) continue;
      if (!(to in ALLOWED)) {
        // A file at the top of src/ (main.ts) is imported by no layer.
        problems.push(`${file}: src/${from} imports '${specifier}', which is not a layer`);
      } else if (!ALLOWED[from].includes(to)) {
        problems.push(`${file}: src/${from} must not import src/${to} ('${specifier}')`);
      }
    } else if (
      /^@grpc\/|^grpc-health-check$/.test(specifier) &&
      from !== undefined &&
      !GRPC_LAYERS.has(from)
    ) {
      problems.push(
        `${file}: src/${from} must not know gRPC ('${specifier}'); only server, client and cluster do`,
      );
    }
    if (ETCD_CLIENT.test(specifier) && from !== 'cluster') {
      problems.push(`${file}: only src/cluster talks to etcd ('${specifier}')`);
    }
  }
  return problems;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.ts$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

describe('import direction', () => {
  const sites: ImportSite[] = sourceFiles(SRC).flatMap((path) => {
    const file = relative(SRC, path).split(sep).join('/');
    return importSpecifiers(readFileSync(path, 'utf8')).map((specifier) => ({ file, specifier }));
  });

  it('finds the imports of every layer that exists', () => {
    const layersWithImports = new Set(
      sites.filter((s) => s.specifier.startsWith('.')).map((s) => layerOf(s.file)),
    );
    for (const layer of ['timer', 'purgatory', 'group', 'server', 'live'])
      expect(layersWithImports).toContain(layer);
  });

  it('follows the dependency matrix of STYLE.md in every file under src/', () => {
    expect(violations(sites)).toEqual([]);
  });

  it('reads every import form: import, import type, export from, dynamic import and require', () => {
    const source = [
      "import { a } from './a';",
      "import type { B } from '../b';",
      "import * as c from './c';",
      "import './d';",
      "export { e } from './e';",
      "export * from './f';",
      "export type { G } from './g';",
      "const h = await import('./h');",
      "const i = require('./i');",
      "// import { j } from './j';",
      "/* import { k } from './k'; */",
      'import {\n  l,\n  m,\n} from "./lm";',
    ].join('\n');
    expect(importSpecifiers(source).sort()).toEqual(
      ['../b', './a', './c', './d', './e', './f', './g', './h', './i', './lm'].sort(),
    );
  });

  it.each([
    ['time/x.ts', '../timer', 'src/time must not import src/timer'],
    ['timer/x.ts', '../purgatory/delayed-operation', 'src/timer must not import src/purgatory'],
    ['purgatory/x.ts', '../errors', 'src/purgatory must not import src/errors'],
    ['group/x.ts', '../log/partition', 'src/group must not import src/log'],
    ['log/x.ts', '../group', 'src/log must not import src/group'],
    ['group/x.ts', '../server/create-server', 'src/group must not import src/server'],
    ['server/x.ts', '../client/group-member', 'src/server must not import src/client'],
    ['client/x.ts', '../group/group-protocol', 'src/client must not import src/group'],
    ['config/x.ts', '../group/group-config', 'src/config must not import src/group'],
    ['errors/x.ts', '../main', 'which is not a layer'],
    ['group/x.ts', '@grpc/grpc-js', 'src/group must not know gRPC'],
    ['timer/x.ts', '../../test/support/x', 'outside src/'],
    ['metrics/x.ts', '../time', 'src/metrics is not in the dependency matrix'],
    ['log/x.ts', '../cluster/node-session', 'src/log must not import src/cluster'],
    ['group/x.ts', '../cluster', 'src/group must not import src/cluster'],
    ['server/x.ts', 'etcd3', 'only src/cluster talks to etcd'],
    ['cluster/x.ts', '../server/create-server', 'src/cluster must not import src/server'],
    ['cluster/x.ts', '../client/producer', 'src/cluster must not import src/client'],
    ['live/x.ts', '../server/load-protos', 'src/live must not import src/server'],
    ['live/x.ts', '@grpc/grpc-js', 'src/live must not know gRPC'],
    ['group/x.ts', '../live/group-board', 'src/group must not import src/live'],
    ['kafka/x.ts', '../live/group-board', 'src/kafka must not import src/live'],
  ])('reports %s importing %s', (file, specifier, message) => {
    const found = violations([{ file, specifier }]);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(message);
  });

  it.each([
    ['timer/x.ts', '../time'],
    ['purgatory/x.ts', '../timer/timer-task'],
    ['group/x.ts', '../errors'],
    ['server/x.ts', '../group/group-coordinator'],
    ['server/x.ts', '@grpc/grpc-js'],
    ['client/x.ts', '@grpc/grpc-js'],
    ['main.ts', './server'],
    ['group/a/b.ts', '../c'],
    ['cluster/x.ts', '@grpc/grpc-js'],
    ['cluster/x.ts', '../log/partition'],
    ['server/x.ts', '../cluster/node-session'],
    ['server/x.ts', '../live/group-board'],
    ['live/x.ts', '../group'],
    ['live/x.ts', '../log'],
    ['live/x.ts', '../cluster/metadata-store'],
  ])('allows %s to import %s', (file, specifier) => {
    expect(violations([{ file, specifier }])).toEqual([]);
  });
});

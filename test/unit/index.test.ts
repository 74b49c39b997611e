import { resolve } from 'node:path';
import ts from 'typescript';
import * as cohort from '../../src';

const ENTRY = resolve(__dirname, '..', '..', 'src', 'index.ts');

/** The package entry point's exports, each with the TSDoc of the declaration it resolves to. */
function exportedDocs(): Map<string, string> {
  const program = ts.createProgram([ENTRY], {
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    types: [],
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(ENTRY) as ts.SourceFile;
  const module = checker.getSymbolAtLocation(source) as ts.Symbol;
  const docs = new Map<string, string>();
  for (const symbol of checker.getExportsOfModule(module)) {
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    docs.set(symbol.name, ts.displayPartsToString(target.getDocumentationComment(checker)).trim());
  }
  return docs;
}

describe('the package entry point', () => {
  it('documents every export with TSDoc', () => {
    const docs = exportedDocs();
    expect(docs.size).toBeGreaterThan(50);
    expect([...docs].filter(([, doc]) => doc === '').map(([name]) => name)).toEqual([]);
  });

  it('exports the SDK, its errors and startServer, and nothing server-side besides', () => {
    expect(Object.keys(cohort).sort()).toEqual(
      [
        'COHORT_ADMIN_DEFAULTS',
        'CONSUMER_DEFAULTS',
        'COOPERATIVE_STICKY_ASSIGNOR',
        'CONSUMER_PROTOCOL_TYPE',
        'CONSUMER_PROTOCOL_VERSION',
        'CohortAdmin',
        'CohortClient',
        'CohortError',
        'Consumer',
        'ConsumerProtocolError',
        'ErrorCode',
        'GROUP_EVENT_REASONS',
        'GROUP_MEMBER_DEFAULTS',
        'GroupMember',
        'GrpcTransport',
        'ManualTime',
        'PRODUCER_DEFAULTS',
        'Producer',
        'RANGE_ASSIGNOR',
        'ROUND_ROBIN_ASSIGNOR',
        'ServerUnreachableError',
        'compareTopicPartitions',
        'cooperativeStickyAssign',
        'createDefaultPartitioner',
        'decodeAssignment',
        'decodeSubscription',
        'encodeAssignment',
        'encodeSubscription',
        'rangeAssign',
        'roundRobinAssign',
        'startServer',
        'topicPartitionKey',
      ].sort(),
    );
  });

  it('hands out the assignors under the names the group votes with', () => {
    expect(cohort.RANGE_ASSIGNOR).toMatchObject({ name: 'range', rebalanceProtocol: 'eager' });
    expect(cohort.ROUND_ROBIN_ASSIGNOR).toMatchObject({ name: 'roundrobin', rebalanceProtocol: 'eager' });
    expect(cohort.COOPERATIVE_STICKY_ASSIGNOR).toMatchObject({
      name: 'cooperative-sticky',
      rebalanceProtocol: 'cooperative',
    });
  });
});

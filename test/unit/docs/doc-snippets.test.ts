import { docFiles, exampleText, runnableBlocks } from '../../support/doc-examples';

/**
 * Every TypeScript, JavaScript and Python block in README.md and docs/ is an example that the tests run:
 * a file under examples/ (or a `#region` of one), shown verbatim. test/integration/examples.test.ts runs the
 * programs, jest runs examples/*.test.ts, test/integration/python-member.test.ts the Python member. A
 * block that cannot run (a patch, say) says why in a `<!-- not an example: ... -->` comment above it.
 */
describe('the code in the docs', () => {
  const blocks = docFiles().flatMap(runnableBlocks);

  it('finds the docs and their code blocks', () => {
    expect(blocks.length).toBeGreaterThan(10);
  });

  it('is all examples, or says why a block is not', () => {
    const unmarked = blocks.filter((b) => b.example === null).map((b) => b.where);
    expect(unmarked).toEqual([]);
  });

  it.each(blocks.filter((b) => b.example).map((b) => [b.where, b] as const))(
    '%s shows its example exactly',
    (_where, block) => {
      const { file, region } = block.example ?? { file: '', region: undefined };
      expect(block.code).toBe(exampleText(file, region));
    },
  );
});

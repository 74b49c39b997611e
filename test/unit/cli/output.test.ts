import { renderTable, toJson } from '../../../src/cli/output';

describe('CLI output', () => {
  it('pads columns to their widest cell and prints missing values as -', () => {
    expect(
      renderTable(
        ['GROUP', 'LAG', 'CONSUMER-ID'],
        [
          ['billing', 12n, null],
          ['a', 0, 'member-1'],
        ],
      ),
    ).toBe('GROUP    LAG  CONSUMER-ID\nbilling  12   -\na        0    member-1\n');
    expect(renderTable(['A', 'B'], [])).toBe('A  B\n');
    expect(renderTable(['ISR'], [[[0, 1]], [[]]])).toBe('ISR\n0,1\n-\n');
  });

  it('writes one JSON document per line, offsets as numbers and buffers as text', () => {
    expect(toJson({ offset: 9007199254740991n, key: Buffer.from('k'), nested: [1n] })).toBe(
      '{"offset":9007199254740991,"key":"k","nested":[1]}\n',
    );
  });
});

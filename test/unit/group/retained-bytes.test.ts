import { retainBytes, retainProtocols } from '../../../src/group/retained-bytes';

describe('retainBytes', () => {
  it('copies a view into an exact-size buffer of its own, so the request buffer can be freed', () => {
    const request = Buffer.alloc(8_192, 7);
    const view = request.subarray(100, 110);
    const kept = retainBytes(view);
    expect(kept.equals(view)).toBe(true);
    expect(kept.buffer).not.toBe(request.buffer);
    expect(kept.buffer.byteLength).toBe(10);
    request.fill(0);
    expect(kept.every((b) => b === 7)).toBe(true);
  });

  it('keeps protocol names and copies every protocol metadata', () => {
    const request = Buffer.from('....range-meta....roundrobin-meta....');
    const protocols = [
      { name: 'range', metadata: request.subarray(4, 14) },
      { name: 'roundrobin', metadata: request.subarray(18, 33) },
    ];
    const kept = retainProtocols(protocols);
    expect(kept.map((p) => [p.name, p.metadata.toString()])).toEqual([
      ['range', 'range-meta'],
      ['roundrobin', 'roundrobin-meta'],
    ]);
    for (const p of kept) expect(p.metadata.buffer.byteLength).toBe(p.metadata.length);
  });
});

import { createHmac } from 'node:crypto';
import { Metadata } from '@grpc/grpc-js';
import {
  hasNodeCredentials,
  INCOMPLETE_NODE_MESSAGE,
  MALFORMED_NODE_MESSAGE,
  NO_CLUSTER_SECRET,
  NODE_AUTH_METADATA_KEY,
  NODE_ID_METADATA_KEY,
  nodeAuthFor,
  nodeCredentialsFor,
  NodeCredentialsCheck,
  NOT_A_NODE,
  peekMetadata,
  REPEATED_NODE_MESSAGE,
  UNCHECKABLE_NODE_MESSAGE,
  WRONG_NODE_MESSAGE,
} from '../../../src/server/node-credentials';

const SECRET = 'q7Hk2VtN9wXc4RzL0pB6mYs3JdF8aGe1';

function metadataOf(entries: readonly (readonly [string, string])[]): Metadata {
  const metadata = new Metadata();
  for (const [key, value] of entries) metadata.add(key, value);
  return metadata;
}

function asNode(nodeId: number | string, auth: string): Metadata {
  return metadataOf([
    [NODE_ID_METADATA_KEY, String(nodeId)],
    [NODE_AUTH_METADATA_KEY, auth],
  ]);
}

describe('node credentials', () => {
  const check = new NodeCredentialsCheck(SECRET);

  it('derive the credential as HMAC-SHA256 of "cohort-node:<id>" keyed with the secret, in hex', () => {
    const expected = createHmac('sha256', SECRET).update('cohort-node:7').digest('hex');
    expect(nodeAuthFor(SECRET, 7)).toBe(expected);
    expect(nodeCredentialsFor(SECRET, 7)).toEqual({ nodeId: 7, auth: expected });
    // Nothing of the secret itself travels.
    expect(expected).not.toContain(SECRET);
  });

  it('prove the node id they were made for', () => {
    expect(check.authenticate(asNode(1, nodeAuthFor(SECRET, 1)))).toBe(1);
    expect(check.authenticate(asNode(0, nodeAuthFor(SECRET, 0)))).toBe(0);
    expect(check.authenticate(asNode(2147483647, nodeAuthFor(SECRET, 2147483647)))).toBe(2147483647);
    // Hex digits in either case.
    expect(check.authenticate(asNode(3, nodeAuthFor(SECRET, 3).toUpperCase()))).toBe(3);
  });

  it('make a call without them a client, whatever else it carries', () => {
    expect(check.authenticate(new Metadata())).toBe(NOT_A_NODE);
    expect(check.authenticate(metadataOf([['authorization', 'Bearer x']]))).toBe(NOT_A_NODE);
  });

  it("refuse another node's credential, another secret's, and a changed one", () => {
    expect(check.authenticate(asNode(2, nodeAuthFor(SECRET, 1)))).toBe(WRONG_NODE_MESSAGE);
    expect(check.authenticate(asNode(1, nodeAuthFor(`${SECRET}x`, 1)))).toBe(WRONG_NODE_MESSAGE);
    const auth = nodeAuthFor(SECRET, 1);
    const flipped = `${auth.slice(0, -1)}${auth.endsWith('0') ? '1' : '0'}`;
    expect(check.authenticate(asNode(1, flipped))).toBe(WRONG_NODE_MESSAGE);
  });

  it('refuse half of them, repeated ones and malformed ones', () => {
    expect(check.authenticate(metadataOf([[NODE_ID_METADATA_KEY, '1']]))).toBe(INCOMPLETE_NODE_MESSAGE);
    expect(check.authenticate(metadataOf([[NODE_AUTH_METADATA_KEY, nodeAuthFor(SECRET, 1)]]))).toBe(
      INCOMPLETE_NODE_MESSAGE,
    );
    const twice = asNode(1, nodeAuthFor(SECRET, 1));
    twice.add(NODE_ID_METADATA_KEY, '2');
    expect(check.authenticate(twice)).toBe(REPEATED_NODE_MESSAGE);
    const twoAuths = asNode(1, nodeAuthFor(SECRET, 1));
    twoAuths.add(NODE_AUTH_METADATA_KEY, nodeAuthFor(SECRET, 1));
    expect(check.authenticate(twoAuths)).toBe(REPEATED_NODE_MESSAGE);
    for (const id of ['-1', '01', '1.0', ' 1', '1, 2', '2147483648', '99999999999', 'one']) {
      expect([id, check.authenticate(asNode(id, nodeAuthFor(SECRET, Number(id) || 1)))]).toEqual([
        id,
        MALFORMED_NODE_MESSAGE,
      ]);
    }
    for (const auth of ['', 'xyz', nodeAuthFor(SECRET, 1).slice(1), `${nodeAuthFor(SECRET, 1)}0`]) {
      expect(check.authenticate(asNode(1, auth))).toBe(MALFORMED_NODE_MESSAGE);
    }
  });

  it('are checked once per call: a second look gives the same answer', () => {
    const metadata = asNode(4, nodeAuthFor(SECRET, 4));
    expect(check.authenticate(metadata)).toBe(4);
    expect(check.authenticate(metadata)).toBe(4);
  });

  it('cannot be checked, and are refused, by a server without a cluster secret', () => {
    expect(NO_CLUSTER_SECRET.authenticate(asNode(1, nodeAuthFor(SECRET, 1)))).toBe(UNCHECKABLE_NODE_MESSAGE);
    expect(NO_CLUSTER_SECRET.authenticate(metadataOf([[NODE_ID_METADATA_KEY, '1']]))).toBe(
      UNCHECKABLE_NODE_MESSAGE,
    );
    expect(NO_CLUSTER_SECRET.authenticate(new Metadata())).toBe(NOT_A_NODE);
    expect(() => new NodeCredentialsCheck('')).toThrow(RangeError);
  });

  it('are looked for without allocating: grpc-js still keeps metadata in a Map named internalRepr', () => {
    // If this fails after a grpc-js upgrade, peekMetadata falls back to Metadata.get, which allocates an
    // empty array for every client call: adapt peekMetadata to the new representation.
    const metadata = metadataOf([['authorization', 'Bearer x']]);
    expect((metadata as unknown as { internalRepr: unknown }).internalRepr).toBeInstanceOf(Map);
    expect(peekMetadata(metadata, NODE_ID_METADATA_KEY)).toBeUndefined();
    expect(peekMetadata(metadata, 'authorization')).toEqual(metadata.get('authorization'));
    expect(hasNodeCredentials(metadata)).toBe(false);
    expect(hasNodeCredentials(metadataOf([[NODE_AUTH_METADATA_KEY, 'x']]))).toBe(true);
  });
});

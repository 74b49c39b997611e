import { randomBytes, randomUUID } from 'node:crypto';
import { estimateTokenBits, isWeakToken, WEAK_TOKEN_BITS } from '../../../src/server/token-strength';

describe('token strength', () => {
  it.each([
    ['one character repeated', 'xxxxxxxxxxxxxxxx'],
    ['a longer run of one character', 'a'.repeat(64)],
    ['a counting sequence', '0123456789abcdef'],
    ['the alphabet', 'abcdefghijklmnopqrstuvwxyz'],
    ['a sequence with a stride', 'acegikmoqsuwy{}'],
    ['a repeated block', 'abcabcabcabcabcabcabc'],
    ['a repeated word', 'passwordpassword'],
    ['a keyboard row', 'qwertyuiopasdfgh'],
    ['a typed password', 'Password1234567!'],
  ])('calls %s weak', (_what, token) => {
    expect(estimateTokenBits(token)).toBeLessThan(WEAK_TOKEN_BITS);
    expect(isWeakToken(token)).toBe(true);
  });

  it.each([
    [
      '32 random bytes in base64url (node -e ... randomBytes(32).toString("base64url"))',
      () => randomBytes(32).toString('base64url'),
    ],
    ['32 random bytes in base64 (openssl rand -base64 32)', () => randomBytes(32).toString('base64')],
    ['16 random bytes in hex (openssl rand -hex 16)', () => randomBytes(16).toString('hex')],
    ['a random UUID', () => randomUUID()],
  ])('never calls %s weak', (_what, make) => {
    // Random, so run it often: the estimate of a random token of this length is far above the bar.
    for (let i = 0; i < 500; i++) expect(isWeakToken(make())).toBe(false);
  });

  it('estimates a token made of a block repeated no higher than the block and where it stops', () => {
    const block = randomBytes(6).toString('base64url'); // 8 characters, at most 48 bits
    expect(estimateTokenBits(block.repeat(8))).toBeLessThanOrEqual(estimateTokenBits(block) + Math.log2(64));
  });
});

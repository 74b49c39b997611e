/**
 * How guessable a bearer token looks. Only its length is a rule (MIN_TOKEN_LENGTH), so
 * `xxxxxxxxxxxxxxxx` would pass; this estimates how much information the token holds, to warn about
 * tokens a person typed rather than a random generator made.
 *
 * The estimate is the smallest of three descriptions of the token, each an upper bound on what an attacker
 * who guesses that way must search:
 *
 * - characters: `length × H`, H the Shannon entropy of the token's own character frequencies — a random
 *   token's characters are spread evenly; `aaaaaaaa` has H = 0;
 * - steps: the first character (log2 95 bits, printable ASCII) plus `(length − 1) × H` of the differences
 *   between neighbouring character codes — `0123456789abcdef` or `abcdefgh…` step by the same amount;
 * - repetition: a token that repeats a shorter block (`abcabcabc…`, `passwordpassword`) holds no more than
 *   that block, plus log2(length) bits for where the repetition stops.
 *
 * Worked example: `0123456789abcdef` has 16 distinct characters, 64 bits by characters; its steps are +1
 * fourteen times and +40 once, H ≈ 0.35, so 6.6 + 15 × 0.35 ≈ 12 bits: weak. 32 random bytes in base64url
 * (43 characters) come to ≈ 200 bits by every description. Empirical entropy underestimates short random
 * strings (16 random hex characters, 64 bits, measure ≈ 50), which errs on the side of a warning.
 */

/** Below this estimate a token is reported as weak: 2^64 guesses stay out of reach of any online attack. */
export const WEAK_TOKEN_BITS = 64;

const PRINTABLE_ASCII_BITS = Math.log2(95);

/** Shannon entropy, in bits per symbol, of the symbols' own frequencies. */
function shannonBitsPerSymbol(symbols: readonly number[]): number {
  if (symbols.length === 0) return 0;
  const counts = new Map<number, number>();
  for (const symbol of symbols) counts.set(symbol, (counts.get(symbol) ?? 0) + 1);
  let bits = 0;
  for (const count of counts.values()) {
    const p = count / symbols.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

function unrepeatedBits(codes: readonly number[]): number {
  const byCharacters = codes.length * shannonBitsPerSymbol(codes);
  const steps = codes.slice(1).map((code, i) => code - codes[i]);
  const bySteps = PRINTABLE_ASCII_BITS + steps.length * shannonBitsPerSymbol(steps);
  return Math.min(byCharacters, bySteps);
}

/** The shortest block the token is a repetition of (the whole token when it repeats nothing). */
function period(codes: readonly number[]): number {
  for (let p = 1; p < codes.length; p++) {
    let isPeriod = true;
    for (let i = p; i < codes.length && isPeriod; i++) isPeriod = codes[i] === codes[i - p];
    if (isPeriod) return p;
  }
  return codes.length;
}

/** cohort's estimate of a token's entropy, in bits (see the module comment). */
export function estimateTokenBits(token: string): number {
  const codes = Array.from(token, (c) => c.codePointAt(0)!);
  const whole = unrepeatedBits(codes);
  const p = period(codes);
  if (p === codes.length) return whole;
  return Math.min(whole, unrepeatedBits(codes.slice(0, p)) + Math.log2(codes.length));
}

/** true when the token looks easy to guess: its estimate is below WEAK_TOKEN_BITS. */
export function isWeakToken(token: string): boolean {
  return estimateTokenBits(token) < WEAK_TOKEN_BITS;
}

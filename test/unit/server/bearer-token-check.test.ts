import { Metadata } from '@grpc/grpc-js';
import {
  BearerTokenCheck,
  MISSING_TOKEN_MESSAGE,
  REPEATED_TOKEN_MESSAGE,
  WRONG_TOKEN_MESSAGE,
} from '../../../src/server/bearer-token-interceptor';

const TOKEN = 'sixteen-chars-at-least';

function withAuthorization(...values: string[]): Metadata {
  const metadata = new Metadata();
  for (const value of values) metadata.add('authorization', value);
  return metadata;
}

describe('BearerTokenCheck', () => {
  const check = new BearerTokenCheck(TOKEN);

  it('accepts the token after Bearer, whatever the scheme case and the spaces around it', () => {
    expect(check.refusal(withAuthorization(`Bearer ${TOKEN}`))).toBeUndefined();
    expect(check.refusal(withAuthorization(`bearer  ${TOKEN} `))).toBeUndefined();
  });

  it('asks for a token when there is no authorization, or one of another scheme', () => {
    expect(check.refusal(new Metadata())).toBe(MISSING_TOKEN_MESSAGE);
    expect(check.refusal(withAuthorization(`Basic ${TOKEN}`))).toBe(MISSING_TOKEN_MESSAGE);
    expect(check.refusal(withAuthorization('Bearer'))).toBe(MISSING_TOKEN_MESSAGE);
  });

  it('refuses a different token, a prefix or extension of it, and two authorization values', () => {
    for (const other of [TOKEN.slice(0, -1), `${TOKEN}x`, TOKEN.toUpperCase(), 'x'.repeat(TOKEN.length)]) {
      expect(check.refusal(withAuthorization(`Bearer ${other}`))).toBe(WRONG_TOKEN_MESSAGE);
    }
    expect(check.refusal(withAuthorization(`Bearer ${TOKEN}`, `Bearer ${TOKEN}`))).toBe(
      REPEATED_TOKEN_MESSAGE,
    );
    expect(check.refusal(withAuthorization(`Bearer ${TOKEN}`, 'Bearer x'))).toBe(REPEATED_TOKEN_MESSAGE);
  });

  it('never says anything about the expected token', () => {
    for (const message of [MISSING_TOKEN_MESSAGE, WRONG_TOKEN_MESSAGE]) expect(message).not.toContain(TOKEN);
  });

  it('refuses to be built without a token', () => {
    expect(() => new BearerTokenCheck('')).toThrow('must not be empty');
  });
});

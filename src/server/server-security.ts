import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { credentials as channelCredentials, ServerCredentials } from '@grpc/grpc-js';
import type { ChannelCredentials } from '@grpc/grpc-js';
import type { CohortConfig } from '../config';
import { CONFIG_SCHEMA, InvalidConfigError, MIN_TOKEN_LENGTH } from '../config';
import { BearerTokenCheck } from './bearer-token-interceptor';
import { isWeakToken } from './token-strength';

/** How the gRPC listener protects itself, built from the configuration's files. */
export interface ServerSecurity {
  readonly credentials: ServerCredentials;
  /** Present when calls must carry a bearer token. */
  readonly tokenCheck: BearerTokenCheck | undefined;
  readonly isTls: boolean;
  /** Clients must present a certificate signed by `tlsClientCa`. */
  readonly isMutualTls: boolean;
  /**
   * How this process reaches its leader when it is a follower: the nodes of one cluster share their token
   * and TLS settings, so a follower with TLS presents its own certificate (which a mutual-TLS leader checks
   * against the same CA) and trusts the CA of `tlsClientCa`, or the system's CAs without one.
   */
  readonly leaderCredentials: ChannelCredentials;
  /** The token a follower sends its leader, when the cluster has one. */
  readonly token: string | undefined;
  /**
   * The token looks easy to guess (token-strength.ts): the server warns at start-up but serves, as
   * deployments that chose it before this check did expect.
   */
  readonly isTokenWeak: boolean;
}

/** The rules COHORT_TOKEN follows, for a token read from a file. */
function tokenProblem(token: string): string | undefined {
  if (token === '') return 'is empty';
  if (!/^[\x21-\x7e]+$/.test(token))
    return 'must hold printable ASCII without spaces: it travels in an HTTP header';
  if (token.length < MIN_TOKEN_LENGTH)
    return `must hold at least ${MIN_TOKEN_LENGTH} characters, got ${token.length}`;
  return undefined;
}

/**
 * Reads the token file and the TLS files the configuration names, once, at start-up, and checks them
 * before anything binds: a missing or unreadable file, a token that breaks COHORT_TOKEN's rules, text that
 * is not PEM, or a key that does not match its certificate. Throws an InvalidConfigError listing every
 * problem (the process exits 2), never one at a time. File contents never appear in a message.
 */
export function loadServerSecurity(config: CohortConfig): ServerSecurity {
  const problems: string[] = [];
  const read = (key: 'tokenFile' | 'tlsCert' | 'tlsKey' | 'tlsClientCa'): Buffer | undefined => {
    const path = config[key];
    if (path === '') return undefined;
    try {
      return readFileSync(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      problems.push(
        `${CONFIG_SCHEMA[key].flag} (${path}) cannot be read${code === undefined ? '' : ` (${code})`}`,
      );
      return undefined;
    }
  };

  let token: string | undefined = config.token === '' ? undefined : config.token;
  const tokenFile = read('tokenFile');
  if (tokenFile !== undefined) {
    // Editors and `echo` end files with a newline that is no part of the token.
    token = tokenFile.toString('utf8').replace(/\r?\n$/, '');
    const problem = tokenProblem(token);
    if (problem !== undefined)
      problems.push(`${CONFIG_SCHEMA.tokenFile.flag} (${config.tokenFile}) ${problem}`);
  }

  const cert = read('tlsCert');
  const key = read('tlsKey');
  const clientCa = read('tlsClientCa');
  if (cert !== undefined && key !== undefined) {
    try {
      createSecureContext({ cert, key, ...(clientCa === undefined ? {} : { ca: clientCa }) });
    } catch (error) {
      problems.push(
        `${CONFIG_SCHEMA.tlsCert.flag} (${config.tlsCert}), ${CONFIG_SCHEMA.tlsKey.flag} (${config.tlsKey})` +
          `${clientCa === undefined ? '' : ` and ${CONFIG_SCHEMA.tlsClientCa.flag} (${config.tlsClientCa})`} ` +
          `are not usable PEM (a certificate chain, its private key${clientCa === undefined ? '' : ', CA certificates'}): ` +
          (error as Error).message,
      );
    }
  }
  if (problems.length > 0) throw new InvalidConfigError(problems);

  const isTls = cert !== undefined && key !== undefined;
  const isMutualTls = isTls && clientCa !== undefined;
  const credentials = isTls
    ? ServerCredentials.createSsl(clientCa ?? null, [{ cert_chain: cert, private_key: key }], isMutualTls)
    : ServerCredentials.createInsecure();
  const leaderCredentials = isTls
    ? channelCredentials.createSsl(clientCa ?? null, key, cert)
    : channelCredentials.createInsecure();
  return {
    credentials,
    tokenCheck: token === undefined ? undefined : new BearerTokenCheck(token),
    isTls,
    isMutualTls,
    leaderCredentials,
    token,
    isTokenWeak: token !== undefined && isWeakToken(token),
  };
}

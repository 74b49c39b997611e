import { X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { credentials as channelCredentials, ServerCredentials } from '@grpc/grpc-js';
import type { ChannelCredentials } from '@grpc/grpc-js';
import type { EtcdClientTls, EtcdCredentials } from '../cluster/etcd-metadata-store';
import type { CohortConfig } from '../config';
import { CONFIG_SCHEMA, InvalidConfigError, isLoopbackListen, MIN_TOKEN_LENGTH } from '../config';
import { BearerTokenCheck } from './bearer-token-interceptor';
import type { NodeAuthenticator, NodeCredentials } from './node-credentials';
import { NO_CLUSTER_SECRET, NodeCredentialsCheck, nodeCredentialsFor } from './node-credentials';
import { isWeakToken } from './token-strength';

/** How the gRPC listener protects itself, built from the configuration's files. */
export interface ServerSecurity {
  readonly credentials: ServerCredentials;
  /** Present when calls must carry a bearer token. */
  readonly tokenCheck: BearerTokenCheck | undefined;
  /**
   * The bearer token itself, for this node's own calls to the other nodes' GroupCoordinator (the live
   * page's ClusterGroupFeed): the nodes of one cluster share it.
   */
  readonly token: string | undefined;
  readonly isTls: boolean;
  /** Clients must present a certificate signed by `tlsClientCa`. */
  readonly isMutualTls: boolean;
  /**
   * How this node reaches the leaders it follows: the nodes of one cluster share their TLS settings, so a
   * follower with TLS presents its own certificate (which a mutual-TLS leader checks against the same CA)
   * and trusts the CA of `tlsClientCa`, or the system's CAs without one. It proves who it is with its node
   * credentials (the cluster secret), not the bearer token.
   */
  readonly leaderCredentials: ChannelCredentials;
  /**
   * The token looks easy to guess (token-strength.ts): the server warns at start-up but serves, as
   * deployments that chose it before this check did expect.
   */
  readonly isTokenWeak: boolean;
  /**
   * Checks the node credentials calls carry: against the cluster secret when there is one; without, any
   * call that carries some is refused (node-credentials.ts).
   */
  readonly nodeAuthenticator: NodeAuthenticator;
  /** What this node sends to prove it is `config.nodeId`, when the cluster has a secret. */
  readonly nodeCredentials: NodeCredentials | undefined;
  /** The cluster secret looks easy to guess, as `isTokenWeak` judges tokens: a warning, not a refusal. */
  readonly isClusterSecretWeak: boolean;
  /**
   * The cluster secret file can be read by its group or by everyone (mode & 0o077): a warning, not a
   * refusal, because Kubernetes and Docker mount secrets 0644 and 0444 by default.
   */
  readonly isClusterSecretFileShared: boolean;
  /** How the etcd client reaches a locked-down etcd (cluster mode). */
  readonly etcd: EtcdClientSecurity;
}

/** What the etcd client is given from the configuration's files, and what start-up warns about. */
export interface EtcdClientSecurity {
  /** The CA and client certificate for https:// endpoints; undefined for http:// (or no etcd). */
  readonly tls: EtcdClientTls | undefined;
  /** etcd's user and password; undefined without `etcdUsername`. */
  readonly credentials: EtcdCredentials | undefined;
  /** The password looks easy to guess, as `isTokenWeak` judges tokens: a warning, not a refusal. */
  readonly isPasswordWeak: boolean;
  /** The password file can be read by its group or by everyone, as `isClusterSecretFileShared`. */
  readonly isPasswordFileShared: boolean;
  /**
   * The password, and then the token, travel in clear text to an etcd other machines may see the traffic
   * of: a user with http:// endpoints that are not loopback.
   */
  readonly isPasswordInClear: boolean;
}

/** The rules COHORT_TOKEN (and COHORT_CLUSTER_SECRET) follow, for a value read from a file. */
function tokenProblem(token: string): string | undefined {
  if (token === '') return 'is empty';
  if (!/^[\x21-\x7e]+$/.test(token))
    return 'must hold printable ASCII without spaces: it travels in an HTTP header';
  if (token.length < MIN_TOKEN_LENGTH)
    return `must hold at least ${MIN_TOKEN_LENGTH} characters, got ${token.length}`;
  return undefined;
}

/** Group or others may read the file (POSIX modes; Windows has none to look at). */
function isReadableByOthers(path: string): boolean {
  if (process.platform === 'win32') return false;
  try {
    return (statSync(path).mode & 0o077) !== 0;
  } catch {
    return false;
  }
}

/**
 * Reads the token, cluster secret, TLS and etcd client files the configuration names, once, at start-up, and checks them
 * before anything binds: a missing or unreadable file, a token or secret that breaks COHORT_TOKEN's rules,
 * a cluster secret equal to the bearer token, text that
 * is not PEM, or a key that does not match its certificate. Throws an InvalidConfigError listing every
 * problem (the process exits 2), never one at a time. File contents never appear in a message.
 */
export function loadServerSecurity(config: CohortConfig): ServerSecurity {
  const problems: string[] = [];
  const read = (
    key:
      | 'tokenFile'
      | 'clusterSecretFile'
      | 'tlsCert'
      | 'tlsKey'
      | 'tlsClientCa'
      | 'etcdTlsCa'
      | 'etcdTlsCert'
      | 'etcdTlsKey'
      | 'etcdPasswordFile',
  ): Buffer | undefined => {
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

  let clusterSecret: string | undefined = config.clusterSecret === '' ? undefined : config.clusterSecret;
  const clusterSecretFile = read('clusterSecretFile');
  if (clusterSecretFile !== undefined) {
    clusterSecret = clusterSecretFile.toString('utf8').replace(/\r?\n$/, '');
    const problem = tokenProblem(clusterSecret);
    if (problem !== undefined)
      problems.push(`${CONFIG_SCHEMA.clusterSecretFile.flag} (${config.clusterSecretFile}) ${problem}`);
  }
  // A client holding the token would otherwise hold the secret too, and could pass as any node.
  if (clusterSecret !== undefined && clusterSecret === token) {
    problems.push(
      `the cluster secret (${clusterSecretFile === undefined ? CONFIG_SCHEMA.clusterSecret.env : CONFIG_SCHEMA.clusterSecretFile.flag}) ` +
        `must differ from the bearer token (${tokenFile === undefined ? CONFIG_SCHEMA.token.env : CONFIG_SCHEMA.tokenFile.flag}): ` +
        'every client holds the token, and only nodes may hold the secret',
    );
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
  const etcd = readEtcdClientSecurity(config, read, problems);
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
    token,
    isTls,
    isMutualTls,
    leaderCredentials,
    isTokenWeak: token !== undefined && isWeakToken(token),
    nodeAuthenticator:
      clusterSecret === undefined ? NO_CLUSTER_SECRET : new NodeCredentialsCheck(clusterSecret),
    nodeCredentials:
      clusterSecret === undefined ? undefined : nodeCredentialsFor(clusterSecret, config.nodeId),
    isClusterSecretWeak: clusterSecret !== undefined && isWeakToken(clusterSecret),
    isClusterSecretFileShared:
      clusterSecretFile !== undefined && isReadableByOthers(config.clusterSecretFile),
    etcd,
  };
}

/** The PEM certificates of `pem`, each parsed: none, or one that does not parse, is a problem. */
function certificateProblem(pem: Buffer): string | undefined {
  const blocks = pem.toString('utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g);
  if (blocks === null) return 'holds no PEM certificate';
  try {
    for (const block of blocks) new X509Certificate(block);
  } catch (error) {
    return `holds a certificate that does not parse: ${(error as Error).message}`;
  }
  return undefined;
}

/**
 * The etcd client's files, read with the others (every problem listed together): the CA (certificates
 * that parse; a TLS context takes any text without complaint), the client certificate and its key (usable
 * together), and the password (a trailing newline dropped, not empty). Nothing is read without etcd
 * endpoints: validation refused these settings then.
 */
function readEtcdClientSecurity(
  config: CohortConfig,
  read: (key: 'etcdTlsCa' | 'etcdTlsCert' | 'etcdTlsKey' | 'etcdPasswordFile') => Buffer | undefined,
  problems: string[],
): EtcdClientSecurity {
  const caCert = read('etcdTlsCa');
  const cert = read('etcdTlsCert');
  const key = read('etcdTlsKey');
  if (caCert !== undefined) {
    const problem = certificateProblem(caCert);
    if (problem !== undefined)
      problems.push(`${CONFIG_SCHEMA.etcdTlsCa.flag} (${config.etcdTlsCa}) ${problem}`);
  }
  if (cert !== undefined && key !== undefined) {
    try {
      createSecureContext({ cert, key });
    } catch (error) {
      problems.push(
        `${CONFIG_SCHEMA.etcdTlsCert.flag} (${config.etcdTlsCert}) and ${CONFIG_SCHEMA.etcdTlsKey.flag} ` +
          `(${config.etcdTlsKey}) are not usable PEM (a certificate chain and its private key): ` +
          (error as Error).message,
      );
    }
  }
  let password: string | undefined = config.etcdPassword === '' ? undefined : config.etcdPassword;
  const passwordFile = read('etcdPasswordFile');
  if (passwordFile !== undefined) {
    password = passwordFile.toString('utf8').replace(/\r?\n$/, '');
    if (password === '') {
      problems.push(`${CONFIG_SCHEMA.etcdPasswordFile.flag} (${config.etcdPasswordFile}) is empty`);
    }
  }
  const isHttps = config.etcdEndpoints.some((endpoint) => endpoint.startsWith('https://'));
  const tls: EtcdClientTls | undefined = isHttps
    ? {
        ...(caCert === undefined ? {} : { caCert }),
        ...(cert === undefined || key === undefined ? {} : { cert, key }),
      }
    : undefined;
  const credentials =
    config.etcdUsername === '' || password === undefined
      ? undefined
      : { username: config.etcdUsername, password };
  return {
    tls,
    credentials,
    isPasswordWeak: password !== undefined && isWeakToken(password),
    isPasswordFileShared: passwordFile !== undefined && isReadableByOthers(config.etcdPasswordFile),
    isPasswordInClear:
      credentials !== undefined &&
      !isHttps &&
      config.etcdEndpoints.some((endpoint) => !isLoopbackListen(new URL(endpoint).host)),
  };
}

import type { Logger } from 'pino';
import type { CohortConfig } from '../config';
import { isLoopbackListen } from '../config';
import type { ServerSecurity } from './server-security';

/**
 * Logs, once at start-up, every way the configuration exposes a secret or an open door: a bearer token,
 * node credentials or an etcd password that travels in clear text, a secret that looks easy to guess or
 * sits in a file other users can read, an admin listener reachable from elsewhere. None of them stops the
 * server (validation has already refused what cannot work); each names the setting that fixes it.
 */
export function logSecurityWarnings(
  config: CohortConfig,
  security: ServerSecurity,
  adminListen: string | undefined,
  logger: Logger,
): void {
  if (security.tokenCheck !== undefined && !security.isTls && !isLoopbackListen(config.listen)) {
    logger.warn(
      { listen: config.listen },
      'the bearer token travels in clear text on a reachable address: give --tls-cert and --tls-key too',
    );
  }
  if (security.nodeCredentials !== undefined && !security.isTls && !isLoopbackListen(config.listen)) {
    // The credential is a fixed HMAC of the node id: whoever reads one off the wire can replicate as that
    // node (not more: it opens the replication methods only), so it needs TLS off loopback as a token does.
    logger.warn(
      { listen: config.listen },
      'node credentials travel in clear text on a reachable address: give --tls-cert and --tls-key too',
    );
  }
  if (security.isTokenWeak) {
    logger.warn(
      { tokenFrom: config.tokenFile === '' ? 'COHORT_TOKEN' : '--token-file' },
      'the bearer token looks easy to guess (docs/operations.md, "Bearer token"): make one with ' +
        '`openssl rand -base64 32`',
    );
  }
  if (security.isClusterSecretWeak) {
    logger.warn(
      {
        clusterSecretFrom:
          config.clusterSecretFile === '' ? 'COHORT_CLUSTER_SECRET' : '--cluster-secret-file',
      },
      'the cluster secret looks easy to guess (docs/operations.md, "Cluster secret"): make one with ' +
        '`openssl rand -base64 32`',
    );
  }
  if (security.isClusterSecretFileShared) {
    logger.warn(
      { clusterSecretFile: config.clusterSecretFile },
      'the cluster secret file can be read by other users: chmod 600 it (or defaultMode 0400 on a mounted secret)',
    );
  }
  if (security.etcd.isPasswordInClear) {
    logger.warn(
      { etcdEndpoints: config.etcdEndpoints },
      'the etcd password and token travel in clear text to etcd: give https:// endpoints and --etcd-tls-ca',
    );
  }
  if (security.etcd.isPasswordWeak) {
    logger.warn(
      { etcdPasswordFrom: config.etcdPasswordFile === '' ? 'COHORT_ETCD_PASSWORD' : '--etcd-password-file' },
      'the etcd password looks easy to guess (docs/operations.md, "Locking etcd down"): make one with ' +
        '`openssl rand -base64 32`',
    );
  }
  if (security.etcd.isPasswordFileShared) {
    logger.warn(
      { etcdPasswordFile: config.etcdPasswordFile },
      'the etcd password file can be read by other users: chmod 600 it (or defaultMode 0400 on a mounted secret)',
    );
  }
  if (adminListen !== undefined && !isLoopbackListen(adminListen)) {
    logger.warn(
      { adminListen },
      security.tokenCheck === undefined
        ? 'the admin listener (/metrics, the live page) has no authentication and listens on a reachable address'
        : 'the admin listener is plain HTTP on a reachable address: its bearer token travels unencrypted',
    );
  }
}

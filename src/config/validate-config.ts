import type { CohortConfig, ConfigKey } from './cohort-config';
import { LOG_LEVELS } from './cohort-config';
import type { SettingSpec } from './config-schema';
import { CONFIG_SCHEMA, CONFIG_SETTINGS } from './config-schema';
import { ADMIN_LISTEN_OFF, MIN_TOKEN_LENGTH } from './defaults';
import { checkEtcdEndpoints, isPrivateHost } from './etcd-endpoints';
import { isLoopbackListen, parseListenAddress, parseUnixSocket } from './listen-address';

/** Where a value came from; messages name it the way the user gave it. */
export type ConfigSource = 'flag' | 'env' | 'default' | 'override';

export type ConfigSources = Readonly<Record<ConfigKey, ConfigSource>>;

export type ValidatedConfig =
  | { readonly config: CohortConfig; readonly errors?: undefined }
  | { readonly config?: undefined; readonly errors: readonly string[] };

/**
 * How a message refers to a setting and its value: `--group-max-size (0)`, `COHORT_GROUP_MAX_SIZE (0)`,
 * `--group-max-size (default 2147483647)`, or `groupMaxSize (0)` for programmatic overrides.
 */
export function describeSetting(spec: SettingSpec, value: unknown, source: ConfigSource): string {
  // A secret is never echoed: messages end up in terminals, CI logs and bug reports.
  const shown =
    spec.kind === 'secret' || spec.kind === 'password'
      ? 'hidden'
      : typeof value === 'string' || Array.isArray(value)
        ? `'${String(value)}'`
        : String(value);
  switch (source) {
    case 'flag':
      return `${spec.flag} (${shown})`;
    case 'env':
      return `${spec.env} (${shown})`;
    case 'default':
      return `${spec.flag} (default ${shown})`;
    case 'override':
      return `${spec.key} (${shown})`;
  }
}

function nameOf(spec: SettingSpec, source: ConfigSource): string {
  if (source === 'env') return spec.env;
  if (source === 'override') return spec.key;
  return spec.flag;
}

function checkOne(spec: SettingSpec, value: unknown, source: ConfigSource): string | undefined {
  const name = nameOf(spec, source);
  switch (spec.kind) {
    case 'boolean':
      return typeof value === 'boolean' ? undefined : `${name} must be true or false, got ${String(value)}`;
    case 'clockMode':
      return typeof value === 'boolean' || value === 'running'
        ? undefined
        : `${name} must be true, false or 'running', got ${String(value)}`;
    case 'integer': {
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
        return `${name} must be a whole number, got ${String(value)}`;
      }
      if (spec.min !== undefined && value < spec.min) {
        return `${describeSetting(spec, value, source)} must be >= ${spec.min}`;
      }
      if (spec.max !== undefined && value > spec.max) {
        return `${describeSetting(spec, value, source)} must be <= ${spec.max}`;
      }
      return undefined;
    }
    case 'address':
      if (typeof value === 'string') {
        if (parseListenAddress(value) !== undefined || parseUnixSocket(value) !== undefined) return undefined;
      }
      return (
        `${describeSetting(spec, value, source)} must be HOST:PORT with a port from 0 to 65535 ` +
        `(IPv6 in brackets) or unix:PATH, e.g. ${spec.flag} 127.0.0.1:7070, ${spec.flag} [::1]:0 or ` +
        `${spec.flag} unix:/run/cohort.sock`
      );
    case 'adminAddress':
      if (typeof value === 'string') {
        if (value === '' || value === ADMIN_LISTEN_OFF || parseListenAddress(value) !== undefined) {
          return undefined;
        }
      }
      return (
        `${describeSetting(spec, value, source)} must be HOST:PORT with a port from 0 to 65535, or ` +
        `${ADMIN_LISTEN_OFF}, e.g. ${spec.flag} ${String(spec.defaultValue)}`
      );
    case 'urls': {
      if (!Array.isArray(value) || !value.every((url) => typeof url === 'string')) {
        return `${name} must be etcd client URLs separated by commas, e.g. ${spec.flag} http://127.0.0.1:2379`;
      }
      if (value.length === 0) return undefined;
      const checked = checkEtcdEndpoints(value as string[]);
      return checked.ok
        ? undefined
        : `${describeSetting(spec, value, source)}: ${checked.problem}, e.g. ${spec.flag} http://127.0.0.1:2379`;
    }
    case 'name':
      return typeof value === 'string' && /^[A-Za-z0-9._-]{1,64}$/.test(value)
        ? undefined
        : `${describeSetting(spec, value, source)} must be 1 to 64 letters, digits, '.', '_' or '-', e.g. ${spec.flag} cohort`;
    case 'advertisedAddress': {
      if (value === '') return undefined;
      const address = typeof value === 'string' ? parseListenAddress(value) : undefined;
      if (address !== undefined && address.port !== 0 && !isWildcardHost(address.host)) return undefined;
      return (
        `${describeSetting(spec, value, source)} must be the HOST:PORT other nodes and clients connect to, ` +
        `with a port from 1 to 65535 and a host that is not 0.0.0.0 or [::], e.g. ${spec.flag} node-1.internal:7070`
      );
    }
    case 'path':
      return typeof value === 'string' && value.trim() !== ''
        ? undefined
        : `${name} must be a directory path, e.g. ${spec.flag} ./data`;
    case 'file':
      return typeof value === 'string' && (value === '' || value.trim() !== '')
        ? undefined
        : `${name} must be the path of a file, e.g. ${spec.flag} /etc/cohort/file.pem`;
    case 'secret':
      if (typeof value !== 'string' || value === '')
        return typeof value === 'string' ? undefined : `${name} must be text`;
      if (!/^[\x21-\x7e]+$/.test(value)) {
        return `${name} must be printable ASCII without spaces: it travels in an HTTP header`;
      }
      return value.length >= MIN_TOKEN_LENGTH
        ? undefined
        : `${name} must be at least ${MIN_TOKEN_LENGTH} characters long, got ${value.length}`;
    case 'password':
      return typeof value === 'string' ? undefined : `${name} must be text`;
    case 'text':
      return typeof value === 'string' && !hasControlCharacter(value)
        ? undefined
        : `${describeSetting(spec, value, source)} must be text without control characters`;
    case 'logLevel':
      return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value)
        ? undefined
        : `${describeSetting(spec, value, source)} must be one of ${LOG_LEVELS.join(', ')}`;
  }
}

/** A character below space, or DEL: nothing a user name holds, and what a terminal would act on. */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/**
 * Checks a complete candidate configuration once, collecting every problem rather than stopping at the
 * first, so one run of the server tells the user everything to fix. On success the result is frozen.
 */
export function validateConfig(
  candidate: Readonly<Record<ConfigKey, unknown>>,
  sources: ConfigSources,
): ValidatedConfig {
  const errors: string[] = [];
  for (const spec of CONFIG_SETTINGS) {
    const problem = checkOne(spec, candidate[spec.key], sources[spec.key]);
    if (problem !== undefined) errors.push(problem);
  }
  const min = candidate.groupMinSessionTimeoutMs;
  const max = candidate.groupMaxSessionTimeoutMs;
  if (typeof min === 'number' && typeof max === 'number' && min > max) {
    errors.push(
      `${describeSetting(CONFIG_SCHEMA.groupMinSessionTimeoutMs, min, sources.groupMinSessionTimeoutMs)} ` +
        `must be <= ${describeSetting(CONFIG_SCHEMA.groupMaxSessionTimeoutMs, max, sources.groupMaxSessionTimeoutMs)}`,
    );
  }
  errors.push(...replicationProblems(candidate, sources));
  errors.push(...clusterProblems(candidate, sources));
  errors.push(...etcdSecurityProblems(candidate, sources));
  errors.push(...securityProblems(candidate, sources));
  if (errors.length > 0) return { errors };
  const config = {} as Record<ConfigKey, unknown>;
  for (const spec of CONFIG_SETTINGS) config[spec.key] = candidate[spec.key];
  return { config: Object.freeze(config) as unknown as CohortConfig };
}

/**
 * Relations between the listener and security settings: TLS files go together, the token comes from one
 * place, and a listener other machines can reach is protected (TLS or a token) unless `insecure` says the
 * operator accepts the risk.
 */
function securityProblems(candidate: Readonly<Record<ConfigKey, unknown>>, sources: ConfigSources): string[] {
  const problems: string[] = [];
  const describe = (key: ConfigKey): string =>
    describeSetting(CONFIG_SCHEMA[key], candidate[key], sources[key]);
  const named = (key: ConfigKey): string => nameOf(CONFIG_SCHEMA[key], sources[key]);
  const isSet = (key: ConfigKey): boolean => typeof candidate[key] === 'string' && candidate[key] !== '';
  if (isSet('tlsCert') !== isSet('tlsKey')) {
    const given = isSet('tlsCert') ? 'tlsCert' : 'tlsKey';
    problems.push(
      `${describe(given)} needs its twin: give ${CONFIG_SCHEMA.tlsCert.flag} and ${CONFIG_SCHEMA.tlsKey.flag} together`,
    );
  }
  if (isSet('tlsClientCa') && !(isSet('tlsCert') && isSet('tlsKey'))) {
    problems.push(
      `${describe('tlsClientCa')} (mutual TLS) needs ${CONFIG_SCHEMA.tlsCert.flag} and ${CONFIG_SCHEMA.tlsKey.flag}`,
    );
  }
  if (isSet('token') && isSet('tokenFile')) {
    problems.push(`give the token once: ${named('token')} or ${describe('tokenFile')}, not both`);
  }
  if (isSet('clusterSecret') && isSet('clusterSecretFile')) {
    problems.push(
      `give the cluster secret once: ${named('clusterSecret')} or ${describe('clusterSecretFile')}, not both`,
    );
  }
  const { listen, insecure } = candidate;
  const hasProtection = isSet('tlsCert') || isSet('token') || isSet('tokenFile');
  // An address that does not parse has its own message already.
  const isReachable =
    typeof listen === 'string' && parseListenAddress(listen) !== undefined && !isLoopbackListen(listen);
  if (isReachable && !hasProtection && insecure !== true) {
    problems.push(
      `${describe('listen')} can be reached from other machines, and without TLS or a token anyone ` +
        `there can join, fence and delete groups: give ${CONFIG_SCHEMA.tlsCert.flag}/${CONFIG_SCHEMA.tlsKey.flag}, ` +
        `${CONFIG_SCHEMA.tokenFile.flag} or ${CONFIG_SCHEMA.token.env}, listen on loopback or unix:PATH, ` +
        `or accept the risk with ${CONFIG_SCHEMA.insecure.flag}`,
    );
  }
  // Whoever can call TestClock.Advance can move the server's time by any amount: every session and every
  // offset past its retention expires at once. A token does not make that safe on a shared network.
  // Both modes serve TestClock: a running clock jumps as far as a frozen one.
  if (
    isReachable &&
    (candidate.manualClock === true || candidate.manualClock === 'running') &&
    insecure !== true
  ) {
    problems.push(
      `${describe('manualClock')} lets any client that reaches the server advance its clock and expire ` +
        `every session and offset, and ${describe('listen')} can be reached from other machines: listen ` +
        `on loopback (127.0.0.1, [::1], localhost) or unix:PATH, drop ${CONFIG_SCHEMA.manualClock.flag}, ` +
        `or accept the risk with ${CONFIG_SCHEMA.insecure.flag}`,
    );
  }
  const { kafkaListen } = candidate;
  // The Kafka door has neither TLS nor authentication yet: whoever reaches it can join, fence and delete
  // groups and read every topic, whatever protects the gRPC listener.
  if (
    typeof kafkaListen === 'string' &&
    parseListenAddress(kafkaListen) !== undefined &&
    !isLoopbackListen(kafkaListen) &&
    insecure !== true
  ) {
    problems.push(
      `${describe('kafkaListen')} can be reached from other machines, and the Kafka listener has no TLS and ` +
        `no authentication: listen on loopback (127.0.0.1, [::1], localhost), turn it off with ` +
        `${CONFIG_SCHEMA.kafkaListen.flag} off, or accept the risk with ${CONFIG_SCHEMA.insecure.flag}`,
    );
  }
  if (
    typeof kafkaListen === 'string' &&
    candidate.kafkaAdvertisedAddress === '' &&
    isWildcardHost(parseListenAddress(kafkaListen)?.host ?? '')
  ) {
    problems.push(
      `${CONFIG_SCHEMA.kafkaAdvertisedAddress.flag} is required when ${describe('kafkaListen')} names no host ` +
        `a client can connect to: give it HOST:PORT, e.g. ${CONFIG_SCHEMA.kafkaAdvertisedAddress.flag} broker-1.internal:9092`,
    );
  }
  for (const other of ['listen', 'adminListen'] as const) {
    const text = candidate[other];
    if (
      typeof kafkaListen === 'string' &&
      kafkaListen === text &&
      parseListenAddress(kafkaListen) !== undefined &&
      parseListenAddress(kafkaListen)?.port !== 0
    ) {
      problems.push(`${describe('kafkaListen')} must differ from ${describe(other)}`);
    }
  }
  const { adminListen } = candidate;
  if (
    typeof listen === 'string' &&
    typeof adminListen === 'string' &&
    listen === adminListen &&
    parseListenAddress(listen)?.port !== 0
  ) {
    problems.push(`${describe('adminListen')} must differ from ${describe('listen')}`);
  }
  return problems;
}

function isNonEmpty(value: unknown): boolean {
  return typeof value === 'string' && value !== '';
}

/** Why replication needs the cluster secret, and how to give it: the end of a sentence. */
const CLUSTER_SECRET_NEEDED =
  'replication needs a cluster secret so that only a node can fetch as a follower: give every node the ' +
  `same ${CONFIG_SCHEMA.clusterSecretFile.flag} or ${CONFIG_SCHEMA.clusterSecret.env} ` +
  '(e.g. `openssl rand -base64 32`), distinct from the bearer token';

function hasClusterSecret(candidate: Readonly<Record<ConfigKey, unknown>>): boolean {
  return isNonEmpty(candidate.clusterSecret) || isNonEmpty(candidate.clusterSecretFile);
}

/** Relations between the log's settings, which each look fine alone. */
function replicationProblems(
  candidate: Readonly<Record<ConfigKey, unknown>>,
  sources: ConfigSources,
): string[] {
  const problems: string[] = [];
  const describe = (key: ConfigKey): string =>
    describeSetting(CONFIG_SCHEMA[key], candidate[key], sources[key]);
  const { logFlushIntervalMs } = candidate;
  if (logFlushIntervalMs === 0) {
    problems.push(`${describe('logFlushIntervalMs')} must be -1 (never by time) or at least 1`);
  }
  return problems;
}

/** A host that binds every interface and so names none another machine could connect to. */
function isWildcardHost(host: string): boolean {
  return host === '0.0.0.0' || host === '[::]' || host === '[::0]' || host === '[0:0:0:0:0:0:0:0]';
}

/**
 * With etcd endpoints the process is a cluster node: it needs an id of its own, an address others can
 * reach, and the cluster secret its replication proves itself with.
 */
function clusterProblems(candidate: Readonly<Record<ConfigKey, unknown>>, sources: ConfigSources): string[] {
  const { etcdEndpoints, advertisedAddress, listen } = candidate;
  if (!Array.isArray(etcdEndpoints) || etcdEndpoints.length === 0) return [];
  const problems: string[] = [];
  const describe = (key: ConfigKey): string =>
    describeSetting(CONFIG_SCHEMA[key], candidate[key], sources[key]);
  const cluster = describe('etcdEndpoints');
  if (sources.nodeId === 'default') {
    problems.push(
      `${CONFIG_SCHEMA.nodeId.flag} is required with ${cluster}: give every node of the cluster its own id, ` +
        `e.g. ${CONFIG_SCHEMA.nodeId.flag} 1`,
    );
  }
  if (advertisedAddress === '' && typeof listen === 'string') {
    const address = parseListenAddress(listen);
    if (parseUnixSocket(listen) !== undefined || (address !== undefined && isWildcardHost(address.host))) {
      problems.push(
        `${CONFIG_SCHEMA.advertisedAddress.flag} is required with ${cluster} when ${describe('listen')} names ` +
          `no host other nodes can connect to: give ${CONFIG_SCHEMA.advertisedAddress.flag} HOST:PORT, ` +
          `e.g. ${CONFIG_SCHEMA.advertisedAddress.flag} node-1.internal:7070`,
      );
    }
  }
  // The nodes of a cluster replicate to each other. Without a secret any client could fetch as a
  // follower: count as replication, acknowledge acks=-1 writes no follower has, keep a dead one in the ISR.
  if (!hasClusterSecret(candidate))
    problems.push(`${cluster} makes this process a cluster node, and ${CLUSTER_SECRET_NEEDED}`);
  return problems;
}

/** The settings of the etcd client's TLS and authentication, in schema order. */
const ETCD_SECURITY_KEYS = [
  'etcdTlsCa',
  'etcdTlsCert',
  'etcdTlsKey',
  'etcdUsername',
  'etcdPasswordFile',
  'etcdPassword',
] as const satisfies readonly ConfigKey[];

/**
 * How the etcd client protects itself: TLS files that go together and need https:// endpoints, a CA where
 * no public one would do, and a user with exactly one password. Every setting of it needs etcd endpoints.
 */
function etcdSecurityProblems(
  candidate: Readonly<Record<ConfigKey, unknown>>,
  sources: ConfigSources,
): string[] {
  const problems: string[] = [];
  const describe = (key: ConfigKey): string =>
    describeSetting(CONFIG_SCHEMA[key], candidate[key], sources[key]);
  const named = (key: ConfigKey): string => nameOf(CONFIG_SCHEMA[key], sources[key]);
  const isSet = (key: ConfigKey): boolean => isNonEmpty(candidate[key]);
  const given = ETCD_SECURITY_KEYS.filter(isSet);
  const { etcdEndpoints } = candidate;
  const flag = (key: ConfigKey): string => CONFIG_SCHEMA[key].flag;
  if (!Array.isArray(etcdEndpoints) || etcdEndpoints.length === 0) {
    if (given.length > 0) {
      problems.push(
        `${given.map((key) => (CONFIG_SCHEMA[key].kind === 'password' ? named(key) : describe(key))).join(', ')} ` +
          `${given.length === 1 ? 'is' : 'are'} for the etcd client, and there is no etcd: give ` +
          `${flag('etcdEndpoints')} too, or leave ${given.length === 1 ? 'it' : 'them'} out`,
      );
    }
    return problems;
  }
  if (isSet('etcdTlsCert') !== isSet('etcdTlsKey')) {
    const one = isSet('etcdTlsCert') ? 'etcdTlsCert' : 'etcdTlsKey';
    problems.push(
      `${describe(one)} needs its twin: give ${flag('etcdTlsCert')} and ${flag('etcdTlsKey')} together`,
    );
  }
  const checked = etcdEndpoints.every((url) => typeof url === 'string')
    ? checkEtcdEndpoints(etcdEndpoints as string[])
    : undefined;
  // Endpoints that do not check out have their own message already.
  if (checked?.ok === true) {
    const tlsFiles = (['etcdTlsCa', 'etcdTlsCert', 'etcdTlsKey'] as const).filter(isSet);
    if (!checked.isTls && tlsFiles.length > 0) {
      problems.push(
        `${tlsFiles.map(describe).join(', ')} ${tlsFiles.length === 1 ? 'is' : 'are'} for TLS to etcd, and ` +
          `${describe('etcdEndpoints')} ${etcdEndpoints.length === 1 ? 'is' : 'are'} plain http: give ` +
          'https://HOST:PORT endpoints (etcd serving --listen-client-urls https://...), or leave the TLS files out',
      );
    }
    const privateHosts = checked.hostPorts.map(({ host }) => host).filter(isPrivateHost);
    if (checked.isTls && !isSet('etcdTlsCa') && privateHosts.length > 0) {
      problems.push(
        `${describe('etcdEndpoints')} names ${privateHosts.join(', ')}, for which no public CA signs a ` +
          `certificate: give ${flag('etcdTlsCa')} the CA that signed etcd's server certificate ` +
          "(etcd's --trusted-ca-file is usually the same)",
      );
    }
  }
  const hasPassword = isSet('etcdPasswordFile') || isSet('etcdPassword');
  if (isSet('etcdUsername') && !hasPassword) {
    problems.push(
      `${describe('etcdUsername')} needs its password: give ${flag('etcdPasswordFile')} or ` +
        `${CONFIG_SCHEMA.etcdPassword.env}`,
    );
  }
  if (!isSet('etcdUsername') && hasPassword) {
    const password = isSet('etcdPasswordFile') ? describe('etcdPasswordFile') : named('etcdPassword');
    problems.push(`${password} is the password of an etcd user: give ${flag('etcdUsername')} too`);
  }
  if (isSet('etcdPasswordFile') && isSet('etcdPassword')) {
    problems.push(
      `give the etcd password once: ${named('etcdPassword')} or ${describe('etcdPasswordFile')}, not both`,
    );
  }
  return problems;
}

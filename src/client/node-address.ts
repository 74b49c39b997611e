/**
 * Addresses of cohort nodes as the SDK dials them: `host:port`, `[ipv6]:port` or `unix:/path`.
 */

/** Hosts a server binds to but nobody can dial from elsewhere. */
const WILDCARD_HOSTS = new Set(['', '0.0.0.0', '::', '[::]']);

/**
 * The address to dial for a node that the cluster describes as `host:port`, learnt through the connection
 * to `via`. A wildcard host (a node that advertises the address it bound, `0.0.0.0`) is reached at `via`'s
 * host, which is known to work from here.
 */
export function nodeAddress(host: string, port: number, via: string): string {
  if (WILDCARD_HOSTS.has(host)) {
    const viaHost = hostOf(via);
    if (viaHost !== null) return `${viaHost}:${port}`;
  }
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The host part of `host:port` (brackets kept for IPv6), or null for a `unix:` address. */
export function hostOf(address: string): string | null {
  if (address.startsWith('unix:')) return null;
  const colon = address.lastIndexOf(':');
  return colon <= 0 ? null : address.slice(0, colon);
}

/**
 * The bootstrap list of a client: `bootstrap` if given, else `[address]`. Throws a RangeError for an empty
 * list, an empty address, or both options at once with different meanings.
 */
export function bootstrapAddresses(options: {
  readonly address?: string;
  readonly bootstrap?: readonly string[];
}): string[] {
  const { address, bootstrap } = options;
  if (bootstrap !== undefined && address !== undefined) {
    throw new RangeError('give either address or bootstrap, not both (address is one bootstrap node)');
  }
  const list = bootstrap ?? (address === undefined ? [] : [address]);
  if (!Array.isArray(list) || list.length === 0) {
    throw new RangeError('bootstrap must list at least one "host:port" (or give address)');
  }
  for (const entry of list) {
    if (typeof entry !== 'string' || entry.trim() === '') {
      throw new RangeError(
        `every bootstrap address must be "host:port" or "unix:/path", got ${JSON.stringify(entry)}`,
      );
    }
  }
  return [...new Set(list.map((entry) => entry.trim()))];
}

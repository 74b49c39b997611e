/**
 * etcd client URLs as cohort takes them: `http://host:port` or `https://host:port`, one or more, all of one
 * scheme; with more than one, every host an IPv4 address (the etcd client dials them through grpc-js's
 * `ipv4:` target, which takes no names). Shared by configuration validation and the etcd client, so both
 * refuse the same endpoints with the same words.
 */
export type EtcdEndpointsCheck =
  | {
      readonly ok: true;
      readonly hostPorts: readonly { readonly host: string; readonly port: string }[];
      /** Every endpoint is https:// (mixing the two schemes is refused). */
      readonly isTls: boolean;
    }
  | { readonly ok: false; readonly problem: string };

export function checkEtcdEndpoints(endpoints: readonly string[]): EtcdEndpointsCheck {
  if (endpoints.length === 0) return { ok: false, problem: 'etcd endpoints: at least one is needed' };
  const hostPorts: { host: string; port: string }[] = [];
  const schemes = new Set<string>();
  for (const endpoint of endpoints) {
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch {
      return { ok: false, problem: `etcd endpoint '${endpoint}' is not a URL (expected http://host:port)` };
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return {
        ok: false,
        problem: `etcd endpoint '${endpoint}': expected http://host:port or https://host:port`,
      };
    }
    if (url.port === '' || (url.pathname !== '/' && url.pathname !== '')) {
      return { ok: false, problem: `etcd endpoint '${endpoint}': expected ${url.protocol}//host:port` };
    }
    schemes.add(url.protocol);
    hostPorts.push({ host: url.hostname, port: url.port });
  }
  // One channel reaches every endpoint with one set of credentials: TLS to some members and plain text to
  // others would also leave the metadata (and the password) readable on the way to those others.
  if (schemes.size > 1) {
    return {
      ok: false,
      problem: 'etcd endpoints mix http:// and https://: give every endpoint the same scheme',
    };
  }
  if (hostPorts.length > 1 && !hostPorts.every(({ host }) => /^\d{1,3}(\.\d{1,3}){3}$/.test(host))) {
    return {
      ok: false,
      problem: 'etcd endpoints: with more than one, every endpoint must be an IPv4 address',
    };
  }
  return { ok: true, hostPorts, isTls: schemes.has('https:') };
}

/**
 * Whether no public CA would sign a certificate for `host`: a loopback, private or link-local address, or a
 * name only a private network resolves (no dot, `localhost`, `.local`, `.internal`, `.lan`, `.home.arpa`,
 * a Kubernetes `.svc`). etcd serving TLS at such a host uses a certificate of the operator's own CA, which
 * the etcd client must be given: Node's built-in CAs cannot verify it.
 */
export function isPrivateHost(host: string): boolean {
  const name = host.toLowerCase().replace(/^\[|\]$/g, '');
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(name);
  if (v4 !== null) {
    const [a, b] = [Number(v4[1]), Number(v4[2])];
    return (
      a === 10 ||
      a === 127 ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      (a === 169 && b === 254) ||
      (a === 100 && b >= 64 && b <= 127)
    );
  }
  if (name.includes(':')) {
    // IPv6: loopback, unique local (fc00::/7), link-local (fe80::/10).
    return name === '::1' || /^f[cd][0-9a-f]{2}:/.test(name) || /^fe[89ab][0-9a-f]:/.test(name);
  }
  if (!name.includes('.')) return true;
  return /(^|\.)(localhost|local|internal|lan|home\.arpa|svc)$/.test(name);
}

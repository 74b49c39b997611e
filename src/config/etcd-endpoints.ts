/**
 * etcd client URLs as cohort takes them: `http://host:port`, one or more; with more than one, every host
 * an IPv4 address (the etcd client dials them through grpc-js's `ipv4:` target, which takes no names).
 * Only http:// for now: cohort has no TLS to etcd yet. Shared by configuration validation and the etcd
 * client, so both refuse the same endpoints with the same words.
 */
export type EtcdEndpointsCheck =
  | { readonly ok: true; readonly hostPorts: readonly { readonly host: string; readonly port: string }[] }
  | { readonly ok: false; readonly problem: string };

export function checkEtcdEndpoints(endpoints: readonly string[]): EtcdEndpointsCheck {
  if (endpoints.length === 0) return { ok: false, problem: 'etcd endpoints: at least one is needed' };
  const hostPorts: { host: string; port: string }[] = [];
  for (const endpoint of endpoints) {
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch {
      return { ok: false, problem: `etcd endpoint '${endpoint}' is not a URL (expected http://host:port)` };
    }
    if (url.protocol !== 'http:') {
      return {
        ok: false,
        problem: `etcd endpoint '${endpoint}': only http:// is supported (no TLS to etcd yet)`,
      };
    }
    if (url.port === '' || (url.pathname !== '/' && url.pathname !== '')) {
      return { ok: false, problem: `etcd endpoint '${endpoint}': expected http://host:port` };
    }
    hostPorts.push({ host: url.hostname, port: url.port });
  }
  if (hostPorts.length > 1 && !hostPorts.every(({ host }) => /^\d{1,3}(\.\d{1,3}){3}$/.test(host))) {
    return {
      ok: false,
      problem: 'etcd endpoints: with more than one, every endpoint must be an IPv4 address',
    };
  }
  return { ok: true, hostPorts };
}

/**
 * The host part of a grpc-js peer string (`127.0.0.1:52144`, `::1:52144`, `[::1]:52144`,
 * `ipv4:10.0.0.1:80`), as DescribeGroups reports it in `client_host`. grpc-js writes IPv6 peers without
 * brackets, so the port is whatever follows the last colon.
 */
export function clientHostOf(peer: string): string {
  let host = peer;
  const scheme = /^(ipv4|ipv6):/.exec(host);
  if (scheme !== null) host = host.slice(scheme[0].length);
  const colon = host.lastIndexOf(':');
  if (colon > 0 && /^\d+$/.test(host.slice(colon + 1))) host = host.slice(0, colon);
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  return host;
}

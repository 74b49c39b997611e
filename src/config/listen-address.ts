export interface ListenAddress {
  /** As written, IPv6 keeps its brackets: `127.0.0.1`, `localhost`, `[::1]`. */
  readonly host: string;
  /** 0..65535; 0 asks the OS for a free port. */
  readonly port: number;
}

const HOST_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/;
const BRACKETED_IPV6 = /^\[[0-9A-Fa-f:.]+\]$/;

/**
 * Reads `HOST:PORT` (`[IPV6]:PORT` for IPv6). Returns undefined for anything else, so the caller can say
 * what is wrong in its own words.
 */
export function parseListenAddress(text: string): ListenAddress | undefined {
  const colon = text.lastIndexOf(':');
  if (colon <= 0) return undefined;
  const host = text.slice(0, colon);
  const portText = text.slice(colon + 1);
  if (!/^\d{1,5}$/.test(portText)) return undefined;
  const port = Number(portText);
  if (port > 65_535) return undefined;
  if (!HOST_NAME.test(host) && !BRACKETED_IPV6.test(host)) return undefined;
  return { host, port };
}

/** How a `listen` address names a Unix domain socket, as grpc-js reads it. */
export const UNIX_SOCKET_PREFIX = 'unix:';

/**
 * The path of `unix:PATH` (`unix:cohort.sock` relative to the working directory, `unix:/run/cohort.sock` or
 * `unix:///run/cohort.sock` absolute, as grpc-js takes them); undefined for anything else.
 */
export function parseUnixSocket(text: string): string | undefined {
  if (!text.startsWith(UNIX_SOCKET_PREFIX)) return undefined;
  let path = text.slice(UNIX_SOCKET_PREFIX.length);
  if (path.startsWith('//')) path = path.slice(2);
  return path.trim() === '' || path.includes('\0') ? undefined : path;
}

const LOOPBACK_IPV4 = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

/**
 * Whether only this machine can reach `listen`: a Unix socket, `localhost`, 127.0.0.0/8 or [::1]. Any other
 * host (0.0.0.0, a name, an interface address) may be reachable from the network.
 */
export function isLoopbackListen(listen: string): boolean {
  if (parseUnixSocket(listen) !== undefined) return true;
  const address = parseListenAddress(listen);
  if (address === undefined) return false;
  const host = address.host.toLowerCase();
  return host === 'localhost' || host === '[::1]' || LOOPBACK_IPV4.test(host);
}

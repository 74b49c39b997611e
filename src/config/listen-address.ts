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

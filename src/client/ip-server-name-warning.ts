const PATCHED = Symbol.for('cohort.ignoreIpServerNameWarning');

/** Node's code for "Setting the TLS ServerName to an IP address is not permitted by RFC 6066". */
export const IP_SERVER_NAME_WARNING = 'DEP0123';

type EmitWarning = typeof process.emitWarning;

/**
 * Drops Node's DEP0123 deprecation warning from `target`'s stderr, and no other warning. grpc-js sets the
 * TLS server name (SNI) to the host it dials, an IP address included, and has no option not to
 * (grpc/grpc-node#1919); Node then prints the warning on the first TLS connection to an IP address. Nothing
 * is wrong: the server's certificate is still checked against that address, and a name given with
 * `grpc.ssl_target_name_override` is not an IP address. The programs that own their process — the `cohort`
 * CLI, the server (a follower dials its leader) and the health probe — call this at start-up; the SDK
 * leaves its users' process alone. Idempotent.
 */
export function ignoreIpServerNameWarning(target: NodeJS.Process = process): void {
  const marked = target as NodeJS.Process & { [PATCHED]?: true };
  if (marked[PATCHED]) return;
  marked[PATCHED] = true;
  const emitWarning: EmitWarning = target.emitWarning;
  target.emitWarning = function (this: NodeJS.Process, warning: string | Error, ...rest: unknown[]): void {
    // emitWarning(warning, type, code, ctor) or emitWarning(warning, { type, code, ... }).
    const [typeOrOptions, code] = rest;
    const warningCode =
      typeof typeOrOptions === 'object' && typeOrOptions !== null
        ? (typeOrOptions as { code?: unknown }).code
        : code;
    if (warningCode === IP_SERVER_NAME_WARNING) return;
    (emitWarning as (...args: unknown[]) => void).call(this, warning, ...rest);
  } as EmitWarning;
}

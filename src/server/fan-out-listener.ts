type Hook = (...args: unknown[]) => void;

/**
 * One listener that calls each of `listeners`' hooks in order, for a layer that takes a single listener
 * (the coordinator, the replica manager) when the server has several (logs, metrics). `L` is a listener
 * interface: optional hooks that return nothing. A hook none of them has is left out, so the layer below
 * still skips it at no cost.
 */
export function fanOutListener<L extends object>(listeners: readonly L[]): L {
  const combined: Record<string, Hook> = {};
  const records = listeners as readonly object[] as readonly Record<string, unknown>[];
  const names = new Set(records.flatMap((listener) => Object.keys(listener)));
  for (const name of names) {
    const hooks = records
      .map((listener) => listener[name])
      .filter((hook): hook is Hook => typeof hook === 'function');
    if (hooks.length === 1) combined[name] = hooks[0];
    else if (hooks.length > 1) combined[name] = (...args) => hooks.forEach((hook) => hook(...args));
  }
  return combined as L;
}

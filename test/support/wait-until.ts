/**
 * Resolves once `condition` holds, checking every 20 ms; rejects naming `what` after `timeoutMs`. The bound
 * only turns "never" into a failure: tests wait on conditions, never on a duration.
 */
export async function waitUntil(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A request context's `onCancel` driven by an AbortSignal, for tests that cancel a call with an
 * AbortController: `{ clientHost: 'h', ...cancelOn(controller.signal) }`. Same contract as the server's:
 * the listener runs once, at once if the signal has already aborted; the returned function unregisters it.
 */
export function cancelOn(signal: AbortSignal): { onCancel(listener: () => void): () => void } {
  return {
    onCancel(listener) {
      if (signal.aborted) {
        listener();
        return () => {};
      }
      signal.addEventListener('abort', listener, { once: true });
      return () => signal.removeEventListener('abort', listener);
    },
  };
}

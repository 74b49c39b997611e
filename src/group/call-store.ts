/** A store call whose synchronous throw becomes a rejection, so that callers handle failure in one place. */
export function callStore(write: () => Promise<void>): Promise<void> {
  try {
    return write();
  } catch (error) {
    return Promise.reject(error);
  }
}

import { GroupCommit } from '../../../../src/log/storage/group-commit';

/** A sync that the test ends by hand; it reports `end` as the offset made durable. */
class ManualSync {
  started = 0;
  private finish: (() => void) | null = null;
  end = 0;

  readonly sync = (): Promise<number> => {
    this.started++;
    const end = this.end;
    return new Promise<number>((resolve) => {
      this.finish = () => resolve(end);
    });
  };

  complete(): void {
    const finish = this.finish;
    this.finish = null;
    finish?.();
  }
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('GroupCommit.requestSync', () => {
  test('runs a sync even when every offset is durable, and waits for one that started after it', async () => {
    const manual = new ManualSync();
    manual.end = 10;
    const commit = new GroupCommit(manual.sync, 10);
    // Every offset is durable already: a request for one resolves without a sync.
    await commit.request(9);
    expect(manual.started).toBe(0);
    let isSynced = false;
    manual.end = 11;
    const first = commit.request(10).then(() => undefined);
    await turn();
    expect(manual.started).toBe(1);
    // Asked while that sync runs: it may have fsynced the directory before the change, so it does not count.
    void commit.requestSync().then(() => (isSynced = true));
    manual.complete();
    await first;
    await turn();
    expect(isSynced).toBe(false);
    expect(manual.started).toBe(2);
    manual.complete();
    await turn();
    expect(isSynced).toBe(true);
    expect(commit.syncCount).toBe(2);
  });
});

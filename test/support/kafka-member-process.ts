import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { DEBIAN_PYTHON } from './kafka-client-packages';
import { waitUntil } from './wait-until';

/** The Kafka clients a member can run on: KafkaJS, librdkafka through confluent-kafka, kafka-python. */
export type KafkaClientKind = 'kafkajs' | 'confluent-kafka' | 'kafka-python';

export interface KafkaMemberOptions {
  readonly kind: KafkaClientKind;
  /** The Kafka listener's address, `HOST:PORT`. */
  readonly bootstrap: string;
  readonly topic: string;
  readonly groupId: string;
  /** The member's client id: the wire trace and DescribeGroups tell members apart by it. */
  readonly clientId: string;
  readonly sessionTimeoutMs: number;
  /** librdkafka's and kafka-python's assignor, `range` unless given; KafkaJS has only RoundRobinAssigner. */
  readonly assignor?: 'range' | 'roundrobin';
}

/** A record as a member read it; a null key or value stays null. */
export interface ConsumedRecord {
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  readonly value: string | null;
}

const REPO_ROOT = join(__dirname, '..', '..');
const running = new Set<KafkaMemberProcess>();

/**
 * A consumer-group member of a real Kafka client in a child process (test/support/kafkajs-member.js or
 * kafka-member.py): it subscribes to one topic from the earliest offset and commits only when told. The
 * test reads what it reports (assignments, records, error codes) and tells it to commit or leave, or kills
 * it with SIGKILL: no LeaveGroup, no more heartbeats. `killKafkaMembers()` in afterEach ends those left.
 */
export class KafkaMemberProcess {
  /** The partitions of its latest assignment; undefined until it has one. */
  assignment: number[] | undefined;
  readonly records: ConsumedRecord[] = [];
  /** The Kafka error codes the client reported. */
  readonly errors: number[] = [];
  readonly exited: Promise<void>;
  private commits = 0;
  private hasLeft = false;
  private stderr = '';
  private readonly child: ChildProcess;

  constructor(readonly options: KafkaMemberOptions) {
    const { kind, bootstrap, topic, groupId, clientId, sessionTimeoutMs, assignor = 'range' } = options;
    const args = [bootstrap, topic, groupId, clientId, String(sessionTimeoutMs), assignor];
    this.child =
      kind === 'kafkajs'
        ? spawn(process.execPath, [join(__dirname, 'kafkajs-member.js'), ...args], { cwd: REPO_ROOT })
        : spawn(DEBIAN_PYTHON, [join(__dirname, 'kafka-member.py'), kind, ...args], { cwd: REPO_ROOT });
    running.add(this);
    this.exited = new Promise((resolve) =>
      this.child.once('close', () => {
        running.delete(this);
        resolve();
      }),
    );
    let partial = '';
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) this.onEvent(line);
    });
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-4000);
    });
    this.child.stdin!.on('error', () => undefined);
  }

  get isRunning(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Waits until the member holds exactly `count` partitions. */
  async assigned(
    count: number,
    what = `${this.options.clientId} to hold ${count} partitions`,
  ): Promise<number[]> {
    await this.until(() => this.assignment?.length === count, what);
    return this.assignment!;
  }

  /** Waits until the member has read `count` records. */
  async read(count: number): Promise<ConsumedRecord[]> {
    await this.until(() => this.records.length >= count, `${this.options.clientId} to read ${count} records`);
    return this.records;
  }

  /** Commits every record read so far (synchronously, in the client), and waits for it. */
  async commit(): Promise<void> {
    const before = this.commits;
    this.child.stdin!.write('commit\n');
    await this.until(() => this.commits > before, `${this.options.clientId} to commit`);
  }

  /** Leaves the group as the client does on close (a LeaveGroup), and waits for the process to exit. */
  async leave(): Promise<void> {
    this.child.stdin!.end('leave\n');
    await this.until(() => this.hasLeft, `${this.options.clientId} to leave`);
    await this.exited;
  }

  /** SIGKILL: the member sends nothing more, LeaveGroup included. Resolves once it is gone. */
  async kill(): Promise<void> {
    if (this.isRunning) this.child.kill('SIGKILL');
    await this.exited;
  }

  /** Waits for `condition`, failing at once (with the client's stderr) if the process ends first. */
  async until(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
    await waitUntil(
      () => {
        if (condition()) return true;
        if (!this.isRunning)
          throw new Error(`${this.options.clientId} (${this.options.kind}) exited first:\n${this.stderr}`);
        return false;
      },
      what,
      timeoutMs,
    );
  }

  private onEvent(line: string): void {
    if (line.trim() === '') return;
    const event = JSON.parse(line) as {
      assigned?: number[];
      record?: ConsumedRecord;
      error?: number;
      committed?: boolean;
      left?: boolean;
    };
    if (event.assigned !== undefined) this.assignment = event.assigned;
    if (event.record !== undefined) this.records.push(event.record);
    if (event.error !== undefined) this.errors.push(event.error);
    if (event.committed === true) this.commits++;
    if (event.left === true) this.hasLeft = true;
  }
}

/** Kills every member process still running (afterEach): nothing outlives its test. */
export async function killKafkaMembers(): Promise<void> {
  await Promise.all([...running].map((member) => member.kill()));
}

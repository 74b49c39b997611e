/**
 * The SDK members of bench:group's rebalance-announcement section, in a process of their own (started by
 * bench/group/rebalance-announcement.ts), loaded as the server children are (scripts/register-typescript.js,
 * not ts-node, which loads `domain` and slows every EventEmitter: a compiled application never loads it).
 * One CohortClient (one grpc-js channel) holds the group's members.
 *
 * The parent asks, over IPC: `form` (the members join and every one holds its assignment), `join` (one more
 * member joins; answers once every member holds its assignment in the next generation, with the time that
 * took and this process's CPU over it), `close`; and `bare`, a reference side run whole in this process
 * (bench/group/announcement-raw.ts), so that it runs in a process loaded as the SDK's members are.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join as joinPath } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CohortClient, RANGE_ASSIGNOR, type GroupMember } from '../../src';
import { rawAnnouncement, type RawAnnouncementPlan } from './announcement-raw';
import { serveParent } from './child-rpc';

export interface AnnouncementPlan {
  readonly target: string;
  readonly groupId: string;
  readonly members: number;
  readonly partitions: number;
  readonly heartbeatIntervalMs: number;
  readonly sessionTimeoutMs: number;
  readonly heartbeatOverStream: boolean;
}

export interface AnnouncementTiming {
  /** From the newcomer's `join` to every member holding its assignment in the new generation. */
  readonly ms: number;
  /** This process's CPU over the same span. */
  readonly clientCpuMs: number;
  /** From the newcomer's `join` to the first and the last member told to revoke (its rebalance began). */
  readonly firstRevokedMs: number;
  readonly lastRevokedMs: number;
}

const TOPIC = 'orders';

let client: CohortClient | undefined;
let plan: AnnouncementPlan | undefined;
let members: GroupMember[] = [];
let generationId = 0;

/** Resolves once `all` are stable in one generation above `after`, each partition handed out once. */
function allAssigned(all: readonly GroupMember[], after: number, partitions: number): Promise<number> {
  return new Promise((resolve, reject) => {
    // Each member must be assigned after this point, so the full check (which builds the set of partitions
    // handed out) waits until every one has been, then runs again on each later `assigned`.
    const heard = new Set<GroupMember>();
    const onAssigned = function (this: GroupMember): void {
      heard.add(this);
      if (heard.size === all.length) check();
    };
    const check = (): void => {
      const generation = all[0].generationId;
      if (generation <= after) return;
      const owned = new Set<string>();
      let handedOut = 0;
      for (const m of all) {
        if (m.state !== 'stable' || m.generationId !== generation || m.assignment === null) return;
        for (const tp of m.assignment) owned.add(`${tp.topic}-${tp.partition}`);
        handedOut += m.assignment.length;
      }
      if (owned.size !== partitions || handedOut !== partitions) return;
      cleanup();
      resolve(generation);
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(error);
    };
    const cleanup = (): void => {
      for (const m of all) {
        m.off('assigned', onAssigned);
        m.off('error', onError);
      }
    };
    for (const m of all) {
      m.on('assigned', onAssigned);
      m.on('error', onError);
    }
  });
}

function join(p: AnnouncementPlan): GroupMember {
  return (client as CohortClient).join({
    groupId: p.groupId,
    topics: [TOPIC],
    partitionsPerTopic: new Map([[TOPIC, p.partitions]]),
    protocols: [RANGE_ASSIGNOR],
    sessionTimeoutMs: p.sessionTimeoutMs,
    heartbeatIntervalMs: p.heartbeatIntervalMs,
    heartbeatOverStream: p.heartbeatOverStream,
  });
}

async function form(p: AnnouncementPlan): Promise<void> {
  plan = p;
  client = new CohortClient({ address: p.target, clientId: 'announcement' });
  members = Array.from({ length: p.members }, () => join(p));
  generationId = await allAssigned(members, 0, p.partitions);
}

/**
 * BENCH_ANNOUNCEMENT_PROFILE=DIR writes a CPU profile of the measured window alone (the newcomer's join to
 * every member assigned; sampled every 100 µs) to DIR, one file per rebalance: the process's profile
 * with --cpu-prof would be mostly the group's formation.
 */
const PROFILE_DIR = process.env.BENCH_ANNOUNCEMENT_PROFILE;

function post(session: Session, method: string, params?: object): Promise<unknown> {
  return new Promise((resolve, reject) =>
    session.post(method, params ?? {}, (error, result) => (error ? reject(error) : resolve(result))),
  );
}

async function startProfile(): Promise<Session | undefined> {
  if (PROFILE_DIR === undefined) return undefined;
  const session = new Session();
  session.connect();
  await post(session, 'Profiler.enable');
  await post(session, 'Profiler.setSamplingInterval', { interval: 100 });
  await post(session, 'Profiler.start');
  return session;
}

async function stopProfile(session: Session | undefined, name: string): Promise<void> {
  if (session === undefined || PROFILE_DIR === undefined) return;
  const { profile } = (await post(session, 'Profiler.stop')) as { profile: unknown };
  session.disconnect();
  writeFileSync(joinPath(PROFILE_DIR, `${name}-${process.pid}.cpuprofile`), JSON.stringify(profile));
}

async function joinOne(): Promise<AnnouncementTiming> {
  const p = plan as AnnouncementPlan;
  const session = await startProfile();
  const revokedAt: number[] = [];
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  for (const m of members) m.once('revoked', () => revokedAt.push(performance.now() - t0));
  const all = [...members, join(p)];
  generationId = await allAssigned(all, generationId, p.partitions);
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await stopProfile(session, `${p.heartbeatOverStream ? 'stream' : 'unary'}-${p.groupId}`);
  members = all;
  return {
    ms,
    clientCpuMs: (cpu.user + cpu.system) / 1_000,
    firstRevokedMs: revokedAt[0] ?? NaN,
    lastRevokedMs: revokedAt.at(-1) ?? NaN,
  };
}

async function close(): Promise<void> {
  await client?.close();
  client = undefined;
  members = [];
}

serveParent(
  {
    form: (p: AnnouncementPlan) => form(p),
    join: () => joinOne(),
    close,
    // The references: the same rebalance with bare clients as members, in a process like this one.
    bare: (p: RawAnnouncementPlan) => rawAnnouncement(p),
  },
  close,
);

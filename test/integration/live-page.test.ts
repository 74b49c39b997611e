import { mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { CohortClient, type GroupMember } from '../../src';
import { launchChromium } from '../support/chromium';
import { offsetCommitRequest } from '../support/group-harness';
import type { TestServer } from '../support/start-test-server';
import { startTestServer } from '../support/start-test-server';
import { MEMBER_DEFAULTS, ObservedTransport, partitionsOf, settled } from './sdk-harness';

/**
 * The admin listener's live page in a real browser (Debian's chromium, headless, driven by puppeteer-core):
 * a real server on the manual clock, a producer and a three-member group of SDK members; the page shows the
 * group's assignment and lag, then a member's session expiry, the rebalance and the new generation as they
 * happen, without a reload. Client data stays text. With a token, the stream and /metrics refuse requests
 * without it, and the page asks for the token.
 *
 * COHORT_SCREENSHOTS=docs writes the screenshot to docs/images/live-page.png (the one docs/live-page.md and
 * the README show); otherwise it goes to the temp directory.
 */

const TOPIC = 'orders';
const PARTITIONS = 3;
const RECORDS_PER_PARTITION = 40;
const TOKEN = 'Zq3v9Xw0bT7nKd2LpR8sYf4HcJ6mAe1U';
const SCREENSHOT =
  process.env.COHORT_SCREENSHOTS === 'docs'
    ? join(__dirname, '../../docs/images/live-page.png')
    : join(tmpdir(), `cohort-live-page-${process.pid}.png`);

/**
 * What the functions run in the page read of its globals: this project compiles without the DOM library,
 * and these casts compile away, so the functions reach the browser as written.
 */
interface InPage {
  readonly document: {
    querySelector(
      selector: string,
    ): { textContent: string | null; getAttribute?(name: string): string | null } | null;
  };
  pwned?: number;
  notReloaded?: boolean;
}

let browser: Browser;
const clients: CohortClient[] = [];
let t: TestServer | undefined;

beforeAll(async () => {
  // Room for an apt-get install of chromium on a fresh machine.
  browser = await launchChromium();
}, 300_000);

afterAll(async () => {
  await browser?.close();
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await t?.close();
  t = undefined;
});

function client(clientId: string, transport?: ObservedTransport): CohortClient {
  const c = new CohortClient({ address: t!.target, clientId, ...(transport ? { transport } : {}) });
  clients.push(c);
  return c;
}

/** The text of the first element matching `selector`, or null. */
function textOf(page: Page, selector: string): Promise<string | null> {
  return page.evaluate(
    (s) => (globalThis as unknown as InPage).document.querySelector(s)?.textContent ?? null,
    selector,
  );
}

/** Waits until the page's `selector` has exactly `text`. */
async function waitForText(page: Page, selector: string, text: string): Promise<void> {
  await page.waitForFunction(
    (s, expected) => (globalThis as unknown as InPage).document.querySelector(s)?.textContent === expected,
    { timeout: 20_000 },
    selector,
    text,
  );
}

/** Resolves once every member in `live` has had a heartbeat answered after this call. */
async function nextHeartbeats(transports: readonly ObservedTransport[]): Promise<void> {
  await Promise.all(
    transports.map(
      (transport) =>
        new Promise<void>((resolve) => {
          const onOutcome = (outcome: { method: string }): void => {
            if (outcome.method !== 'heartbeat') return;
            transport.off('outcome', onOutcome);
            resolve();
          };
          transport.on('outcome', onOutcome);
        }),
    ),
  );
}

it('shows a three-member group with its assignment and lag, then a session expiry, the rebalance and the new generation, live', async () => {
  t = await startTestServer({
    manualClock: true,
    groupInitialRebalanceDelayMs: 0,
    adminListen: '127.0.0.1:0',
  });
  const clock = t.testClock();
  const producerClient = client('live-producer');
  await producerClient.admin().createTopics([{ name: TOPIC, numPartitions: PARTITIONS }]);
  const producer = producerClient.producer({ acks: -1 });
  for (let partition = 0; partition < PARTITIONS; partition++) {
    for (let i = 0; i < RECORDS_PER_PARTITION; i++)
      await producer.send({ topic: TOPIC, partition, value: `order ${i}` });
  }

  const groupId = `billing-${process.pid}`;
  const transports = [0, 1, 2].map(() => new ObservedTransport(t!.target));
  const members: GroupMember[] = [];
  const partitions = partitionsOf(TOPIC, PARTITIONS);
  for (const [i, transport] of transports.entries()) {
    members.push(
      client(`billing-worker-${i + 1}`, transport).join({
        ...MEMBER_DEFAULTS,
        groupId,
        topics: [TOPIC],
        partitionsPerTopic: new Map([[TOPIC, PARTITIONS]]),
      }),
    );
  }
  const generation = await settled(members, partitions);
  // Each member has consumed a quarter of its partition: lag 30 on each, 90 in all.
  for (const m of members) {
    await m.commitOffsets(
      (m.assignment ?? []).map((tp) => ({ ...tp, offset: BigInt(RECORDS_PER_PARTITION / 4) })),
    );
  }

  const page = await browser.newPage();
  await page.goto(`${t.adminUrl}/#group=${encodeURIComponent(groupId)}`);
  await waitForText(page, '[data-testid=group-members]', '3');
  await waitForText(page, '[data-testid=group-generation]', String(generation));
  await waitForText(page, '[data-testid=group-state]', 'Stable');
  const assignments = await page.$$eval('[data-testid=member-assignment]', (cells) =>
    cells.map((c) => c.textContent).sort(),
  );
  expect(assignments).toEqual(['orders(0)', 'orders(1)', 'orders(2)']);
  // Lag has no event: it reaches the page with the next once-a-second sample.
  await clock.advance({ ms: 1_000 });
  await waitForText(page, '[data-testid=group-lag]', String((3 * (RECORDS_PER_PARTITION * 3)) / 4));
  expect(
    await page.$$eval('[data-testid=partition-lag]', (cells) => cells.map((c) => c.textContent)),
  ).toEqual(['30', '30', '30']);
  expect(await textOf(page, `#groups-body tr[data-group="${groupId}"] td:nth-child(6)`)).toBe('90');
  await page.evaluate(() => ((globalThis as unknown as InPage).notReloaded = true));

  // The third member stops heartbeating (a frozen process); the others keep theirs up while the server's
  // clock moves past the session timeout in steps shorter than it.
  const [survivors, frozen] = [transports.slice(0, 2), transports[2]];
  frozen.hold('heartbeat');
  frozen.hold('joinGroup');
  const frozenId = members[2].memberId;
  for (let elapsedMs = 0; elapsedMs <= MEMBER_DEFAULTS.sessionTimeoutMs; elapsedMs += 2_000) {
    await nextHeartbeats(survivors);
    await clock.advance({ ms: 2_000 });
  }
  const newGeneration = await settled(members.slice(0, 2), partitions);
  expect(newGeneration).toBe(generation + 1);
  // The survivors catch up: the lag drains over the next seconds.
  for (const committed of [20, 30, 40]) {
    for (const m of members.slice(0, 2)) {
      await m.commitOffsets((m.assignment ?? []).map((tp) => ({ ...tp, offset: BigInt(committed) })));
    }
    await clock.advance({ ms: 1_000 });
  }

  await waitForText(page, '[data-testid=group-generation]', String(newGeneration));
  await waitForText(page, '[data-testid=group-members]', '2');
  await waitForText(page, '[data-testid=group-lag]', '0');
  const departed = await textOf(page, `tr[data-departed="${frozenId}"] td.how`);
  expect(departed).toMatch(/^session expired /);
  const rebalance = await page.$eval(
    `[data-testid=timeline] li[data-generation="${newGeneration}"]`,
    (li) => li.textContent,
  );
  expect(rebalance).toContain('session-expired');
  expect(rebalance).toContain(`generation ${newGeneration}`);
  expect(rebalance).toContain('→ Stable');
  expect(await page.evaluate(() => (globalThis as unknown as InPage).notReloaded)).toBe(true);

  mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
  expect(readFileSync(SCREENSHOT).subarray(1, 4).toString('latin1')).toBe('PNG');
  frozen.release('joinGroup');
  frozen.release('heartbeat');
  await page.close();
}, 60_000);

it('shows a page opened after a rebalance that rebalance, the member that left and the lag before it', async () => {
  t = await startTestServer({
    manualClock: true,
    groupInitialRebalanceDelayMs: 0,
    adminListen: '127.0.0.1:0',
  });
  const clock = t.testClock();
  const producerClient = client('history-producer');
  await producerClient.admin().createTopics([{ name: TOPIC, numPartitions: PARTITIONS }]);
  const producer = producerClient.producer({ acks: -1 });
  for (let partition = 0; partition < PARTITIONS; partition++)
    for (let i = 0; i < 10; i++) await producer.send({ topic: TOPIC, partition, value: `order ${i}` });

  const groupId = `history-${process.pid}`;
  const partitions = partitionsOf(TOPIC, PARTITIONS);
  const join = (i: number): GroupMember =>
    client(`history-worker-${i}`).join({
      ...MEMBER_DEFAULTS,
      groupId,
      topics: [TOPIC],
      partitionsPerTopic: new Map([[TOPIC, PARTITIONS]]),
    });
  const members = [join(1), join(2)];
  const generation = await settled(members, partitions);
  // Nothing consumed yet: lag 10 a partition, sampled by the server with no page open; then a member leaves
  // and the group rebalances without it, and the survivor consumes everything.
  for (const m of members) await m.commitOffsets((m.assignment ?? []).map((tp) => ({ ...tp, offset: 0n })));
  await clock.advance({ ms: 1_000 });
  const leaverId = members[1].memberId;
  await members[1].close();
  const newGeneration = await settled(members.slice(0, 1), partitions);
  expect(newGeneration).toBe(generation + 1);
  await members[0].commitOffsets(partitions.map((tp) => ({ ...tp, offset: 10n })));
  await clock.advance({ ms: 1_000 });

  // Only now is a page opened.
  const page = await browser.newPage();
  await page.goto(`${t.adminUrl}/#group=${encodeURIComponent(groupId)}`);
  await waitForText(page, '[data-testid=group-generation]', String(newGeneration));
  await waitForText(page, '[data-testid=group-lag]', '0');
  const rebalance = await page.$eval(
    `[data-testid=timeline] li[data-generation="${newGeneration}"]`,
    (li) => li.textContent,
  );
  expect(rebalance).toContain('member-left');
  expect(rebalance).toContain('→ Stable');
  expect(await textOf(page, `tr[data-departed="${leaverId}"] td.how`)).toMatch(/^left /);
  // The lag chart holds the samples from before the page opened: 30, then 0.
  expect(await page.$eval('#lag-chart', (box) => box.getAttribute('data-lag-samples'))).toBe('30 0');
  await page.close();
}, 60_000);

/** The age a member's "last heartbeat" cell shows, in seconds; null while it shows none. */
async function heartbeatAgeS(page: Page): Promise<number | null> {
  const text = await textOf(page, '[data-testid=member-heartbeat]');
  const match = /^(\d+)s ago$/.exec(text ?? '');
  return match === null ? null : Number(match[1]);
}

/** Waits until the page shows a last heartbeat age for which `accept` holds, and returns it. */
async function waitForHeartbeatAge(page: Page, accept: (ageS: number) => boolean): Promise<number> {
  for (;;) {
    const ageS = await heartbeatAgeS(page);
    if (ageS !== null && accept(ageS)) return ageS;
    await page.waitForFunction(
      (shown) =>
        (globalThis as unknown as InPage).document.querySelector('[data-testid=member-heartbeat]')
          ?.textContent !== shown,
      { timeout: 20_000 },
      ageS === null ? null : `${ageS}s ago`,
    );
  }
}

it("shows a member's last heartbeat age, growing while it is silent and reset by its next heartbeat, for the group the page shows", async () => {
  t = await startTestServer({
    manualClock: true,
    groupInitialRebalanceDelayMs: 0,
    adminListen: '127.0.0.1:0',
  });
  const clock = t.testClock();
  await client('heartbeat-admin')
    .admin()
    .createTopics([{ name: TOPIC, numPartitions: 1 }]);
  const groupId = `heartbeats-${process.pid}`;
  const transport = new ObservedTransport(t.target);
  const member = client('heartbeat-worker', transport).join({
    ...MEMBER_DEFAULTS,
    groupId,
    topics: [TOPIC],
    partitionsPerTopic: new Map([[TOPIC, 1]]),
  });
  // A second group, which the page does not show at first: its member heartbeats all along.
  const otherId = `heartbeats-other-${process.pid}`;
  const other = client('heartbeat-other').join({ ...MEMBER_DEFAULTS, groupId: otherId, topics: [] });
  await settled([member], partitionsOf(TOPIC, 1));
  await new Promise((resolve) => other.once('assigned', resolve));

  const page = await browser.newPage();
  await page.goto(`${t.adminUrl}/#group=${encodeURIComponent(groupId)}`);
  await waitForText(page, '[data-testid=group-state]', 'Stable');
  await waitForHeartbeatAge(page, () => true);

  // The member goes silent while the server's clock moves 3 s (well within its 10 s session): one lag
  // round, after which the page lets the age grow on its own.
  transport.hold('heartbeat');
  await clock.advance({ ms: 3_000 });
  const silentS = await waitForHeartbeatAge(page, (ageS) => ageS >= 2);

  // Its next heartbeat reaches the page with the next round.
  const heartbeat = nextHeartbeats([transport]);
  transport.release('heartbeat');
  await heartbeat;
  await clock.advance({ ms: 1_000 });
  expect(await waitForHeartbeatAge(page, (ageS) => ageS < silentS && ageS <= 1)).toBeLessThan(silentS);

  // The other group's heartbeats were not sent while the page showed this one (its view holds the time
  // of its join, 4 s ago on the server's clock); once the page shows it, the server sends them.
  await page.evaluate((id) => {
    (globalThis as unknown as { location: { hash: string } }).location.hash = `#group=${id}`;
  }, encodeURIComponent(otherId));
  await waitForText(page, '[data-testid=group-title]', otherId);
  expect(await waitForHeartbeatAge(page, (ageS) => ageS <= 1)).toBeLessThanOrEqual(1);
  await page.close();
}, 60_000);

it('shows this node in the Cluster panel as leader of every partition, and a topic created later, live', async () => {
  t = await startTestServer({ nodeId: 7, adminListen: '127.0.0.1:0' });
  const admin = client('cluster-admin').admin();
  await admin.createTopics([{ name: TOPIC, numPartitions: PARTITIONS }]);

  const page = await browser.newPage();
  await page.goto(`${t.adminUrl}/`);
  await page.waitForSelector(`#cluster tr[data-topic-partition="${TOPIC}/${PARTITIONS - 1}"]`);
  expect(await textOf(page, '#cluster-mode')).toBe('single node');
  expect(await textOf(page, '[data-testid=cluster-nodes]')).toBe('1 / 1');
  expect(await textOf(page, '[data-testid=cluster-offline]')).toBe('0');
  expect(await textOf(page, '[data-testid=cluster-under-replicated]')).toBe('0');
  expect(await textOf(page, '#cluster tr[data-node="7"] td:nth-child(2)')).toBe(t.target);
  expect(await textOf(page, '#cluster tr[data-node="7"] [data-testid=node-role]')).toBe('this node');
  const rows = await page.$$eval(`#cluster [data-topic-partition^="${TOPIC}/"]`, (trs) =>
    trs.map((tr) =>
      ['partition-leader', 'partition-epoch', 'partition-replicas', 'partition-isr', 'partition-status'].map(
        (id) => tr.querySelector(`[data-testid=${id}]`)?.textContent,
      ),
    ),
  );
  expect(rows).toEqual(Array.from({ length: PARTITIONS }, () => ['7', '0', '7', '7', 'ok']));
  // The server's own topic is listed too, after the others: its partitions' leader coordinates the groups.
  const topics = await page.$$eval('#cluster [data-topic-partition]', (trs) => [
    ...new Set(trs.map((tr) => tr.getAttribute('data-topic-partition')!.split('/')[0])),
  ]);
  expect(topics).toEqual([TOPIC, '__consumer_offsets']);
  const offsetsPartitions = await page.$$eval(
    '#cluster [data-topic-partition^="__consumer_offsets/"] [data-testid=partition-leader]',
    (cells) => cells.map((cell) => cell.textContent),
  );
  expect(new Set(offsetsPartitions)).toEqual(new Set(['7']));
  expect(await textOf(page, '#cluster tr[data-node="7"] [data-testid=node-leads]')).toBe(
    String(PARTITIONS + offsetsPartitions.length),
  );
  await page.evaluate(() => ((globalThis as unknown as InPage).notReloaded = true));

  // A topic created while the page is open reaches it without a reload (read again within a second).
  await admin.createTopics([{ name: 'payments', numPartitions: 2 }]);
  await waitForText(
    page,
    '#cluster tr[data-topic-partition="payments/1"] [data-testid=partition-leader]',
    '7',
  );
  await waitForText(
    page,
    '[data-testid=cluster-partitions]',
    String(PARTITIONS + 2 + offsetsPartitions.length),
  );
  expect(await page.evaluate(() => (globalThis as unknown as InPage).notReloaded)).toBe(true);
  await page.close();
}, 30_000);

it('keeps only the rows in view of a long groups table in the page, and scrolls, filters and selects by keyboard over all of them', async () => {
  t = await startTestServer({ adminListen: '127.0.0.1:0' });
  const groupCount = 300;
  const ids = Array.from({ length: groupCount }, (_, i) => `window-${String(i).padStart(4, '0')}`);
  // Groups made by commits outside group membership: nothing to keep alive.
  const raw = t.groupCoordinator();
  for (const groupId of ids) {
    await raw.offsetCommit(offsetCommitRequest(groupId, 0, TOPIC));
  }
  const rowsInPage = (p: Page): Promise<string[]> =>
    p.$$eval('#groups-body tr[data-group]', (rows) => rows.map((r) => r.getAttribute('data-group') ?? ''));

  const page = await browser.newPage();
  await page.goto(`${t.adminUrl}/`);
  await page.waitForFunction(
    (n) =>
      (globalThis as unknown as InPage).document
        .querySelector('#groups-table')
        ?.getAttribute?.('aria-rowcount') === String(n + 1),
    { timeout: 20_000 },
    groupCount,
  );
  const first = await rowsInPage(page);
  expect(first[0]).toBe(ids[0]);
  expect(first.length).toBeLessThan(groupCount / 3);

  // Scrolled to the end, the last groups are in the page, numbered for screen readers.
  await page.$eval('#groups-scroll', (scroller) => (scroller.scrollTop = scroller.scrollHeight));
  await page.waitForSelector(`#groups-body tr[data-group="${ids[groupCount - 1]}"]`);
  expect(
    await page.$eval(`#groups-body tr[data-group="${ids[groupCount - 1]}"]`, (r) =>
      r.getAttribute('aria-rowindex'),
    ),
  ).toBe(String(groupCount + 1));
  expect((await rowsInPage(page)).length).toBeLessThan(groupCount / 3);

  // The filter runs over every group, those out of the window included.
  await page.type('#filter', ids[150]);
  await page.waitForFunction(
    (id) => {
      const rows = (globalThis as unknown as InPage).document.querySelector('#groups-body');
      return rows?.textContent?.includes(id) === true && rows.textContent.length < 200;
    },
    { timeout: 20_000 },
    ids[150],
  );
  expect(await rowsInPage(page)).toEqual([ids[150]]);
  await page.$eval('#filter', (input) => ((input as unknown as { value: string }).value = ''));
  await page.type('#filter', 'window-');

  // Keyboard: End selects the last group listed, Home the first.
  await page.focus('#groups-scroll');
  await page.keyboard.press('End');
  await waitForText(page, '[data-testid=group-title]', ids[groupCount - 1]);
  await page.waitForSelector(`#groups-body tr.selected[data-group="${ids[groupCount - 1]}"]`);
  await page.keyboard.press('Home');
  await waitForText(page, '[data-testid=group-title]', ids[0]);
  await page.keyboard.press('ArrowDown');
  await waitForText(page, '[data-testid=group-title]', ids[1]);
  await page.close();
}, 60_000);

it('shows a group id holding markup as text, never running it', async () => {
  t = await startTestServer({ groupInitialRebalanceDelayMs: 0, adminListen: '127.0.0.1:0' });
  const groupId = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">';
  const member = client('<b>client</b>').join({ ...MEMBER_DEFAULTS, groupId, topics: [] });
  await new Promise((resolve) => member.once('assigned', resolve));

  const page = await browser.newPage();
  await page.goto(`${t.adminUrl}/`);
  await page.waitForSelector('#groups-body tr');
  expect(await textOf(page, '#groups-body tr td.group-id')).toBe(groupId);
  await waitForText(page, '[data-testid=group-title]', groupId);
  expect(await textOf(page, '#detail [data-member] td:nth-child(3)')).toBe('<b>client</b>');
  expect(await page.evaluate(() => (globalThis as unknown as InPage).pwned)).toBeUndefined();
  expect(await page.$$eval('main script, main img, main b', (found) => found.length)).toBe(0);
  await page.close();
}, 30_000);

it('with a token, refuses the stream and /metrics without it, and the page asks for it once', async () => {
  t = await startTestServer({ token: TOKEN, groupInitialRebalanceDelayMs: 0, adminListen: '127.0.0.1:0' });
  const admin = t.adminUrl!;
  for (const path of ['/api/stream', '/metrics']) {
    expect((await fetch(`${admin}${path}`)).status).toBe(401);
    const wrong = await fetch(`${admin}${path}`, { headers: { authorization: `Bearer ${TOKEN}x` } });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).not.toContain(TOKEN);
  }
  // Saying which group a page shows needs the token too.
  expect((await fetch(`${admin}/api/stream/select?stream=x&group=y`, { method: 'POST' })).status).toBe(401);
  const metrics = await fetch(`${admin}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(metrics.status).toBe(200);
  expect(await metrics.text()).toContain('cohort_');
  // Probes carry no secrets.
  expect((await fetch(`${admin}/healthz`)).status).toBe(200);
  expect((await fetch(`${admin}/readyz`)).status).toBe(200);

  const groupId = `secret-group-${process.pid}`;
  const c = new CohortClient({ address: t.target, clientId: 'secret-client', token: TOKEN });
  clients.push(c);
  const member = c.join({ ...MEMBER_DEFAULTS, groupId, topics: [] });
  await new Promise((resolve) => member.once('assigned', resolve));

  const page = await browser.newPage();
  await page.goto(`${admin}/`);
  await page.waitForSelector('#token-form:not([hidden])');
  // Nothing about the groups reached the page before the token.
  expect(await page.$$eval('#groups-body tr', (rows) => rows.length)).toBe(0);
  await page.type('#token-input', TOKEN);
  await page.click('#token-form button');
  await waitForText(page, '#groups-body tr td.group-id', groupId);
  // Kept for the tab: a reload connects without asking again.
  await page.reload();
  await waitForText(page, '#groups-body tr td.group-id', groupId);
  expect(await page.$eval('#token-form', (form) => (form as unknown as { hidden: boolean }).hidden)).toBe(
    true,
  );
  await page.close();
}, 30_000);

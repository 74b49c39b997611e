import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'puppeteer-core';
import { CohortClient, type GroupMember } from '../../src';
import { launchChromium } from '../support/chromium';
import { offsetCommitRequest } from '../support/group-harness';
import type { TestServer } from '../support/start-test-server';
import { startTestServer } from '../support/start-test-server';
import { MEMBER_DEFAULTS, partitionsOf, settled } from './sdk-harness';

/**
 * The live page's layout at the widths people use (issue 33): in real Chromium, with group ids, instance
 * ids and client ids of 40 to 60 characters, every column of the groups table keeps a usable width, the
 * members and partitions tables fit inside the group's panel with every column (Last heartbeat included)
 * in view, and a cut id carries the whole id in its `title`. Each width's screenshot goes to the temp
 * directory, for a person to look at.
 */

const WIDTHS = [1024, 1280, 1440, 1920];
const TOPIC = 'orders';
const PARTITIONS = 3;
/** A group id is told apart by its first characters: the Group column must show at least these many. */
const GROUP_ID_CHARS_SHOWN = 12;

/** What the measuring function below reads of the page (the project compiles without the DOM library). */
interface Box {
  readonly left: number;
  readonly right: number;
  readonly width: number;
}
interface PageElement {
  textContent: string | null;
  readonly title: string;
  readonly clientWidth: number;
  readonly scrollWidth: number;
  readonly style: { cssText: string };
  getBoundingClientRect(): Box;
  readonly parentElement: PageElement | null;
  closest(selector: string): PageElement | null;
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): ArrayLike<PageElement>;
  append(node: PageElement): void;
  remove(): void;
}
interface InPage {
  readonly document: {
    querySelector(selector: string): PageElement | null;
    querySelectorAll(selector: string): ArrayLike<PageElement>;
    createElement(tag: string): PageElement;
  };
  getComputedStyle(element: PageElement): {
    paddingLeft: string;
    paddingRight: string;
    borderLeftWidth: string;
    borderRightWidth: string;
  };
  requestAnimationFrame(callback: () => void): void;
}

/** What one width measured; every width is reported, so a failure names all that are wrong. */
interface Layout {
  /** Inner width of the Group column, and the width of its first GROUP_ID_CHARS_SHOWN characters. */
  groupColumnPx: number;
  groupIdPrefixPx: number;
  /** Tables (by test id or id) that reach past their panel's content box or their box, by how many px. */
  overflowing: string[];
  /** Scrollers and panels that scroll sideways. */
  scrollingSideways: string[];
  /** Last heartbeat cells (header included) not wholly inside the panel or cut. */
  heartbeatCellsOut: number;
  heartbeatCells: number;
  /** Cut id cells, and those whose title is not their whole text. */
  cutIds: number;
  cutIdsWithoutWholeTitle: string[];
}

/** Runs in the page, after two animation frames (the page renders on the next one after a resize). */
async function measure(prefixChars: number): Promise<Layout> {
  const w = globalThis as unknown as InPage;
  const doc = w.document;
  await new Promise<void>((resolve) => w.requestAnimationFrame(() => w.requestAnimationFrame(resolve)));
  const px = (value: string): number => Number.parseFloat(value) || 0;
  /** The content box of the panel holding `element`: where its tables must stay. */
  const panelBox = (element: PageElement): { left: number; right: number } => {
    const panel = element.closest('.panel')!;
    const box = panel.getBoundingClientRect();
    const style = w.getComputedStyle(panel);
    return {
      left: box.left + px(style.borderLeftWidth) + px(style.paddingLeft),
      right: box.right - px(style.borderRightWidth) - px(style.paddingRight),
    };
  };
  const inside = (element: PageElement): boolean => {
    const box = element.getBoundingClientRect();
    const panel = panelBox(element);
    return box.left >= panel.left - 0.5 && box.right <= panel.right + 0.5;
  };

  const groupHead = doc.querySelector('#groups-table th[data-sort=groupId]')!;
  const headStyle = w.getComputedStyle(groupHead);
  const groupColumnPx = groupHead.clientWidth - px(headStyle.paddingLeft) - px(headStyle.paddingRight);
  const firstId = doc.querySelector('#groups-body td.group-id')!;
  const probe = doc.createElement('span');
  probe.style.cssText = 'white-space: pre; font: inherit; position: absolute; visibility: hidden';
  probe.textContent = (firstId.textContent ?? '').slice(0, prefixChars);
  firstId.append(probe);
  const groupIdPrefixPx = probe.getBoundingClientRect().width;
  probe.remove();

  const overflowing: string[] = [];
  for (const table of Array.from(doc.querySelectorAll('#layout table'))) {
    // Inside its panel, and inside the box it sits in (the Cluster panel sets two tables side by side).
    const box = table.getBoundingClientRect();
    const parent = table.parentElement!.getBoundingClientRect();
    if (inside(table) && box.right <= parent.right + 0.5) continue;
    const named = table as unknown as { id: string; dataset: { testid?: string } };
    overflowing.push(
      `${named.dataset.testid ?? named.id}: ${Math.round(box.right - Math.min(parent.right, panelBox(table).right))} px`,
    );
  }
  const scrollingSideways: string[] = [];
  for (const scroller of Array.from(doc.querySelectorAll('#layout .panel, #layout .scroll'))) {
    if (scroller.scrollWidth > scroller.clientWidth + 1) {
      scrollingSideways.push(
        `${(scroller as unknown as { className: string }).className}: ${scroller.scrollWidth} > ${scroller.clientWidth}`,
      );
    }
  }

  const members = doc.querySelector('[data-testid=members-table]')!;
  const heartbeatColumn = Array.from(members.querySelectorAll('th')).findIndex(
    (th) => th.textContent === 'Last heartbeat',
  );
  const heartbeatCells = Array.from(
    members.querySelectorAll(`th:nth-child(${heartbeatColumn + 1}), td:nth-child(${heartbeatColumn + 1})`),
  );
  const heartbeatCellsOut = heartbeatCells.filter(
    (cell) => heartbeatColumn < 0 || !inside(cell) || cell.scrollWidth > cell.clientWidth,
  ).length;

  const cut = Array.from(doc.querySelectorAll('#layout td')).filter(
    (cell) => cell.scrollWidth > cell.clientWidth,
  );
  const cutIdsWithoutWholeTitle = cut
    .filter((cell) => cell.title !== cell.textContent)
    .map((cell) => cell.textContent ?? '');
  return {
    groupColumnPx,
    groupIdPrefixPx,
    overflowing,
    scrollingSideways,
    heartbeatCellsOut,
    heartbeatCells: heartbeatCells.length,
    cutIds: cut.length,
    cutIdsWithoutWholeTitle,
  };
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

it('keeps every column readable and every table inside its panel at 1024, 1280, 1440 and 1920 px, cutting long ids with the whole id on hover', async () => {
  t = await startTestServer({ groupInitialRebalanceDelayMs: 0, adminListen: '127.0.0.1:0' });
  const admin = new CohortClient({ address: t.target, clientId: 'layout-admin' });
  clients.push(admin);
  await admin.admin().createTopics([{ name: TOPIC, numPartitions: PARTITIONS }]);

  // Ids as long as real ones get: a team, a service, an environment and a region.
  const groupId = `payments-settlement-reconciliation-eu-west-1-${process.pid}`;
  const members: GroupMember[] = [];
  for (let i = 0; i < 3; i++) {
    const c = new CohortClient({
      address: t.target,
      clientId: `payments-settlement-reconciliation-worker-client-${i}`,
    });
    clients.push(c);
    members.push(
      c.join({
        ...MEMBER_DEFAULTS,
        groupId,
        groupInstanceId: `payments-settlement-reconciliation-worker-pod-${i}`,
        topics: [TOPIC],
        partitionsPerTopic: new Map([[TOPIC, PARTITIONS]]),
      }),
    );
  }
  await settled(members, partitionsOf(TOPIC, PARTITIONS));
  // More groups with ids that share a long prefix: the table must show enough of each to tell them apart.
  const raw = t.groupCoordinator();
  for (let i = 0; i < 6; i++) {
    await raw.offsetCommit(offsetCommitRequest(`payments-settlement-backfill-job-${i}-of-six`, 0, TOPIC));
  }

  const page = await browser.newPage();
  await page.goto(`${t.adminUrl}/#group=${encodeURIComponent(groupId)}`);
  await page.waitForSelector('[data-testid=members-table] tr[data-member]');
  await page.waitForFunction(
    () =>
      (globalThis as unknown as InPage).document.querySelectorAll('#groups-body tr[data-group]').length === 7,
    { timeout: 20_000 },
  );

  const measured: Record<number, Layout> = {};
  for (const width of WIDTHS) {
    await page.setViewport({ width, height: 900, deviceScaleFactor: 1 });
    measured[width] = await page.evaluate(measure, GROUP_ID_CHARS_SHOWN);
    await page.screenshot({
      path: join(tmpdir(), `cohort-live-page-layout-${width}-${process.pid}.png`),
      fullPage: true,
    });
  }
  await page.close();

  // Every width's problems, so that one failure names them all.
  const problems = WIDTHS.flatMap((width) => {
    const layout = measured[width];
    const found: string[] = [];
    if (layout.groupColumnPx < layout.groupIdPrefixPx) {
      found.push(
        `Group column ${layout.groupColumnPx} px, narrower than ${GROUP_ID_CHARS_SHOWN} characters (${layout.groupIdPrefixPx} px)`,
      );
    }
    for (const table of layout.overflowing) found.push(`table past its panel: ${table}`);
    for (const scroller of layout.scrollingSideways) found.push(`scrolls sideways: ${scroller}`);
    // One per member, and the header.
    if (layout.heartbeatCells !== members.length + 1)
      found.push(`${layout.heartbeatCells} Last heartbeat cells`);
    if (layout.heartbeatCellsOut > 0)
      found.push(`${layout.heartbeatCellsOut} Last heartbeat cells cut or outside`);
    // The ids are long enough that some are cut at every width: what the title check covers.
    if (layout.cutIds === 0) found.push('no id cut');
    for (const text of layout.cutIdsWithoutWholeTitle) found.push(`cut without its whole title: ${text}`);
    return found.map((problem) => `${width} px: ${problem}`);
  });
  expect(problems).toEqual([]);
}, 60_000);

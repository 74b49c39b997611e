/* global process, console */
/**
 * The import-cycle check (`npm run check:cycles`, run by .ci/run): madge over src/ with the settings of
 * .madgerc, type imports included, failing on every circle except the allowed ones below. The allow-list is
 * exact both ways: a circle not on it fails the check, and so does an entry that no longer matches a circle
 * (remove it). The timer pair is made of type imports only, so turning skipTypeImports back on fails the
 * check too. A plain `npx madge --circular src` reads the same .madgerc and shows the allowed circles.
 */
const fs = require('node:fs');
const path = require('node:path');
const madge = require('madge');

const ROOT = path.join(__dirname, '..');

/**
 * Circles that are the design, each as the files madge names (relative to src/), with the reason.
 */
const ALLOWED_CIRCLES = [
  {
    files: ['timer/timer-task-list.ts', 'timer/timer-task.ts'],
    // A pending TimerTask is a node of the TimerTaskList holding it and points back at that list, so that
    // cancel() removes it in O(1); the list links tasks. Kafka has the same pair (TimerTaskEntry and
    // TimerTaskList reference each other).
    reason: 'a timer task and the list holding it reference each other',
  },
];

/** One name per circle, whatever file madge starts it from. */
function circleKey(files) {
  return [...files].sort().join(' <-> ');
}

async function main() {
  const config = JSON.parse(fs.readFileSync(path.join(ROOT, '.madgerc'), 'utf8'));
  const result = await madge(path.join(ROOT, 'src'), config);
  const allowed = new Map(ALLOWED_CIRCLES.map((entry) => [circleKey(entry.files), entry]));
  const found = new Set();
  const unexpected = [];
  for (const circle of result.circular()) {
    const key = circleKey(circle);
    if (allowed.has(key)) found.add(key);
    else unexpected.push(circle.join(' > '));
  }
  const stale = [...allowed.keys()].filter((key) => !found.has(key));

  const fileCount = Object.keys(result.obj()).length;
  console.log(`Processed ${fileCount} files; allowed circles present: ${found.size}.`);
  for (const key of found) console.log(`  allowed: ${key} (${allowed.get(key).reason})`);
  if (unexpected.length > 0) {
    console.error(`\n${unexpected.length} import circle(s) not on the allow-list (scripts/check-cycles.js):`);
    unexpected.forEach((circle, i) => console.error(`  ${i + 1}) ${circle}`));
    console.error(
      '\nBreak each by moving the shared type below both files (an interface the lower one declares),\n' +
        'not by adding it to the allow-list.',
    );
  }
  if (stale.length > 0) {
    console.error('\nAllowed circles that no longer exist; remove them from scripts/check-cycles.js:');
    for (const key of stale) console.error(`  ${key}`);
  }
  if (unexpected.length > 0 || stale.length > 0) process.exit(1);
  console.log('No other import circle.');
}

main().catch((error) => {
  console.error(error);
  process.exit(2);
});

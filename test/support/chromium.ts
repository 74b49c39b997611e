import puppeteer, { type Browser } from 'puppeteer-core';
import { ensureCommand } from './system-packages';

/** The binary, once found or installed in this worker. */
let chromiumBinary: Promise<string> | undefined;

/**
 * Debian's `chromium`, installed through apt when the tests run as root and it is missing (as etcd is,
 * test/support/etcd.ts); otherwise the test fails saying what to install. puppeteer-core never downloads
 * a browser of its own.
 */
function findChromium(): Promise<string> {
  chromiumBinary ??= ensureCommand('chromium', { debianPackage: 'chromium' });
  chromiumBinary.catch(() => (chromiumBinary = undefined));
  return chromiumBinary;
}

/**
 * Starts headless Chromium for a browser test. Call it from `beforeAll` with a hook timeout that leaves
 * room for an apt-get install on a fresh machine; close the browser in `afterAll`.
 */
export async function launchChromium(): Promise<Browser> {
  const executablePath = await findChromium();
  const isRoot = process.getuid?.() === 0;
  return puppeteer.launch({
    executablePath,
    headless: true,
    args: [
      // Chromium refuses to start its sandbox as root (CI containers run tests as root); as any other user
      // it keeps the sandbox. The page it loads is cohort's own, from 127.0.0.1.
      ...(isRoot ? ['--no-sandbox'] : []),
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--no-first-run',
      '--no-default-browser-check',
      '--disable-extensions',
      '--disable-background-networking',
      '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1',
      '--window-size=1440,900',
    ],
    defaultViewport: { width: 1440, height: 900, deviceScaleFactor: 1 },
  });
}

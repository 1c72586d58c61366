/**
 * Console benchmark: the real server on loopback with 10,000 seeded devices (and a week of their
 * history), headless Chromium (Debian's chromium through playwright-core), signed in once. Rounds
 * interleave the measurements:
 *   - first rows, cold: a fresh browser context (empty cache) opens /ui/; time from navigation start
 *     to the first device row in the DOM;
 *   - first rows, warm: the same page reloaded (assets from the browser cache, shell revalidated);
 *   - search: typing a search text; time from the last keystroke (so the 80 ms debounce counts) to
 *     the table showing only matching rows;
 *   - events page: navigation start to the first row of the event log;
 *   - map, cold: navigation start to the first node of /ui/map (its data request's share: from
 *     navigation start to the end of that response, resource timing).
 * Setting NETKEEP_BENCH_CONSOLE=map measures only the map (its rounds alone, quicker); with
 * NETKEEP_BENCH_CONSOLE_BASELINE=<another build's dist/src/main.js> as well, each round also opens
 * the map of that build (its own server, on a copy of the same data), the two in turns, first one
 * then the other: an A/B on the same machine at the same time.
 * Then the bulk edit of 1,000 devices (`POST /devices/bulk`, one field for all, as the list's
 * "Set for 1,000 devices" sends it): request to answer, over HTTP, alternating two values.
 * Prints median, p10 and p90 of each, and the first load's compressed size (as sent, measured by
 * the browser, and as built). Asserts nothing.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Cookie, Page } from 'playwright-core';
import { chromiumSkipReason, launchChromium } from '../test/helpers/browser.js';
import { seedConsoleData } from './console-seed.js';
import { benchToken, startChild } from './lib.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const devices = 10_000;
const rounds = 15;
const searches = ['alice', 'galaxy', '192.168.7.', 'synology', 'kim', '3c:22:fb:00:2', 'printer', 'erin'];

function summary(all: number[]): string {
  const values = all.filter((v) => Number.isFinite(v));
  const failed = all.length - values.length;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * (sorted.length - 1)))] ?? NaN;
  const timedOut = failed > 0 ? `, ${failed} timed out` : '';
  return `median ${at(0.5).toFixed(0)} ms  (p10 ${at(0.1).toFixed(0)}, p90 ${at(0.9).toFixed(0)}, n=${sorted.length}${timedOut})`;
}

/** Navigation start to the first element matching `selector`, measured in the page. */
async function timeToFirst(page: Page, selector: string): Promise<number> {
  await page.waitForSelector(selector);
  return page.evaluate(() => (window as unknown as { __firstRow?: number }).__firstRow ?? NaN);
}

/** Installed before any page script: records when the first table row of `selector` appears. */
const firstRowProbe = (selector: string) => `
  new MutationObserver((_, observer) => {
    if (document.querySelector(${JSON.stringify(selector)})) {
      window.__firstRow = performance.now();
      observer.disconnect();
    }
  }).observe(document, { childList: true, subtree: true });
`;

async function newSignedInPage(browser: Browser, cookies: Cookie[], selector: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addCookies(cookies);
  await context.addInitScript(firstRowProbe(selector));
  return context.newPage();
}

/** Types `text` into the search box; resolves with ms from the last keystroke to matching rows. */
async function timeSearch(page: Page, text: string): Promise<number> {
  await page.getByLabel('Search').fill('');
  await page.waitForFunction(() => !new URL(location.href).searchParams.has('q'));
  await page.waitForSelector('table.devices[aria-busy="false"] tbody tr');
  const done = page.evaluate(
    (q) =>
      new Promise<number>((resolve) => {
        const input = document.getElementById('device-search');
        let lastKey = 0;
        input?.addEventListener('input', () => (lastKey = performance.now()));
        const check = () => {
          const table = document.querySelector('table.devices');
          const rows = [...document.querySelectorAll('table.devices tbody tr')];
          if (
            lastKey > 0 &&
            table?.getAttribute('aria-busy') === 'false' &&
            new URL(location.href).searchParams.get('q') === q &&
            rows.length > 0 &&
            rows.every(
              (r) => r.textContent.toLowerCase().includes(q.toLowerCase()) || r.querySelector('.empty'),
            )
          ) {
            observer.disconnect();
            resolve(performance.now() - lastKey);
          }
        };
        const observer = new MutationObserver(check);
        observer.observe(document.body, {
          childList: true,
          subtree: true,
          attributes: true,
          characterData: true,
        });
        // A page that never shows the results must not hang the bench: NaN after 10 s.
        setTimeout(() => {
          observer.disconnect();
          resolve(NaN);
        }, 10_000);
      }),
    text,
  );
  await page.getByLabel('Search').pressSequentially(text, { delay: 15 });
  return done;
}

/** The map's first node (a site root or a device: drawn once its data arrived), cold cache. */
async function timeMap(
  browser: Browser,
  cookies: Cookie[],
  url: string,
): Promise<{ paint: number; data: number }> {
  const selector = '[role="treeitem"]';
  const page = await newSignedInPage(browser, cookies, selector);
  await page.goto(`${url}/ui/map`);
  const paint = await timeToFirst(page, selector);
  const data = await page.evaluate(() =>
    Math.max(
      ...performance
        .getEntriesByType('resource')
        .filter((e) => /\/devices(\/map)?(\?|$)/.test(e.name))
        .map((e) => (e as PerformanceResourceTiming).responseEnd),
    ),
  );
  await page.context().close();
  return { paint, data };
}

const bulkDevices = 1000;
const bulkRounds = 10;

/** Times `POST /devices/bulk` setting devGroup on `bulkDevices` devices of the server at `url`. */
export async function measureBulkEdit(url: string, token: string): Promise<number[]> {
  const headers = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
  const list = (await (await fetch(`${url}/devices?limit=${bulkDevices}`, { headers })).json()) as {
    devices: { devMac: string }[];
  };
  const macs = list.devices.map((d) => d.devMac);
  if (macs.length !== bulkDevices) throw new Error(`expected ${bulkDevices} devices, got ${macs.length}`);
  const times: number[] = [];
  for (let round = 0; round < bulkRounds; round++) {
    const body = JSON.stringify({ macs, set: { devGroup: `Bulk ${round % 2}` } });
    const start = performance.now();
    const res = await fetch(`${url}/devices/bulk`, { method: 'POST', headers, body });
    const answer = (await res.json()) as { changed?: string[] };
    times.push(performance.now() - start);
    if (answer.changed?.length !== bulkDevices) throw new Error(`bulk edit answered ${res.status}`);
  }
  return times;
}

export async function run(): Promise<void> {
  const skip = chromiumSkipReason();
  if (skip) {
    console.log(`console bench skipped: ${skip}`);
    return;
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-console-'));
  const seedStart = performance.now();
  seedConsoleData(dataDir, devices, Date.now(), 7);
  console.log(
    `seeded ${devices} devices with a week of history in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`,
  );
  const baseline = process.env.NETKEEP_BENCH_CONSOLE_BASELINE;
  const baselineDir = baseline === undefined ? undefined : mkdtempSync(join(tmpdir(), 'netkeep-bench-base-'));
  if (baselineDir !== undefined) cpSync(dataDir, baselineDir, { recursive: true });
  const env = { API_TOKEN: benchToken, LOG_LEVEL: 'warn' };
  const server = await startChild(join(root, 'dist', 'src', 'main.js'), { ...env, DATA_DIR: dataDir });
  const other =
    baseline === undefined || baselineDir === undefined
      ? undefined
      : await startChild(baseline, { ...env, DATA_DIR: baselineDir });
  const browser = await launchChromium();
  try {
    const cookies = await signIn(browser, server.url);

    const cold: number[] = [];
    const warm: number[] = [];
    const search: number[] = [];
    const events: number[] = [];
    const mapPaint: number[] = [];
    const mapData: number[] = [];
    const measureMap = async () => {
      const map = await timeMap(browser, cookies, server.url);
      mapPaint.push(map.paint);
      mapData.push(map.data);
    };
    if (process.env.NETKEEP_BENCH_CONSOLE === 'map') {
      const loads: number[] = [];
      const otherPaint: number[] = [];
      const otherData: number[] = [];
      const otherCookies = other === undefined ? undefined : await signIn(browser, other.url);
      const measureOther = async () => {
        if (other === undefined || otherCookies === undefined) return;
        const map = await timeMap(browser, otherCookies, other.url);
        otherPaint.push(map.paint);
        otherData.push(map.data);
      };
      for (let round = 0; round < rounds; round++) {
        loads.push(loadavg()[0] ?? NaN);
        if (round % 2 === 0) {
          await measureMap();
          await measureOther();
        } else {
          await measureOther();
          await measureMap();
        }
      }
      console.log(`map, first node, cold cache: ${summary(mapPaint)}`);
      console.log(`map, its data request answered: ${summary(mapData)}`);
      if (other !== undefined) {
        console.log(`baseline map, first node, cold cache: ${summary(otherPaint)}`);
        console.log(`baseline map, its data request answered: ${summary(otherData)}`);
      }
      console.log(`load average (1 min) at each round: ${loads.map((l) => l.toFixed(1)).join(' ')}`);
      return;
    }
    let transferred = 0;
    const loads: number[] = [];
    for (let round = 0; round < rounds; round++) {
      loads.push(loadavg()[0] ?? NaN);
      const page = await newSignedInPage(browser, cookies, 'table.devices tbody tr');
      await page.goto(`${server.url}/ui/`);
      cold.push(await timeToFirst(page, 'table.devices tbody tr'));
      if (round === 0)
        transferred = await page.evaluate(() =>
          performance
            .getEntriesByType('resource')
            .concat(performance.getEntriesByType('navigation'))
            .filter((e) => /\/ui\/(assets\/|$)/.test(e.name))
            .reduce((sum, e) => sum + (e as PerformanceResourceTiming).encodedBodySize, 0),
        );
      await page.reload();
      warm.push(await timeToFirst(page, 'table.devices tbody tr'));
      search.push(await timeSearch(page, searches[round % searches.length] ?? 'alice'));
      await page.context().close();

      const eventsPage = await newSignedInPage(browser, cookies, 'main table tbody tr');
      await eventsPage.goto(`${server.url}/ui/events`);
      events.push(await timeToFirst(eventsPage, 'main table tbody tr'));
      await eventsPage.context().close();
      await measureMap();
    }
    const bulk = await measureBulkEdit(server.url, benchToken);
    const built = JSON.parse(readFileSync(join(root, 'dist', 'console', 'build.json'), 'utf8')) as {
      files: Record<string, { bytes: number; gzip: number; br: number }>;
    };
    const firstLoad = Object.entries(built.files).filter(([name]) =>
      /^(index\.html|main-.*\.(js|css))$/.test(name),
    );
    const sum = (key: 'bytes' | 'gzip' | 'br') => firstLoad.reduce((s, [, f]) => s + f[key], 0);
    const script = firstLoad.find(([name]) => name.endsWith('.js'))?.[1];
    console.log(`first rows of the device list, cold cache: ${summary(cold)}`);
    console.log(`first rows of the device list, warm cache: ${summary(warm)}`);
    console.log(
      `search to matching rows (from the last keystroke, 80 ms debounce included): ${summary(search)}`,
    );
    console.log(`first rows of the event log, cold cache: ${summary(events)}`);
    console.log(`map, first node, cold cache: ${summary(mapPaint)}`);
    console.log(`map, its data request answered: ${summary(mapData)}`);
    console.log(`load average (1 min) at each round: ${loads.map((l) => l.toFixed(1)).join(' ')}`);
    console.log(`bulk edit of ${bulkDevices} devices (POST /devices/bulk, one field): ${summary(bulk)}`);
    console.log(
      `first load as sent (brotli): ${transferred} B; as built: ${sum('bytes')} B raw, ${sum('gzip')} B gzip, ${sum('br')} B brotli; script alone ${script?.br ?? 0} B brotli, ${script?.gzip ?? 0} B gzip`,
    );
  } finally {
    await browser.close();
    await server.stop();
    await other?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    if (baselineDir !== undefined) rmSync(baselineDir, { recursive: true, force: true });
  }
}

/** Signs in on the console at `url` with the bench token; the session's cookies. */
async function signIn(browser: Browser, url: string): Promise<Cookie[]> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${url}/ui/`);
  await page.getByLabel('API token').fill(benchToken);
  await page.keyboard.press('Enter');
  await page.waitForSelector('table.devices tbody tr');
  const cookies = await context.cookies();
  await context.close();
  return cookies;
}

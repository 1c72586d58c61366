/**
 * The screenshots of docs/console/ (`node dist/bench/screenshots.js`): every page of the console
 * at desktop (1280 wide) and phone (390 wide) sizes, light and dark. Seeds an inventory of 240
 * devices with three weeks of history and a small network tree (a router, two switches, a branch
 * site, two probes), starts the real server on loopback and photographs each page with headless
 * Chromium.
 * Pictures are the visible screen, not the whole page, at one device pixel per CSS pixel (phones
 * too), which keeps each one small (30-160 KB). Talks only to 127.0.0.1.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Cookie, Page } from 'playwright-core';
import { launchChromium } from '../test/helpers/browser.js';
import { consoleMac, seedConsoleData } from './console-seed.js';
import { benchToken, startChild } from './lib.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const outDir = join(root, 'docs', 'console');
const mainScript = join(root, 'dist', 'src', 'main.js');

async function settle(page: Page): Promise<void> {
  await page.waitForLoadState('networkidle');
  await page.waitForTimeout(200);
}

/** One picture: the page as it is now, as docs/console/<name><suffix>.png. */
async function shot(page: Page, name: string, suffix: string): Promise<void> {
  await settle(page);
  const path = join(outDir, `${name}${suffix}.png`);
  await page.screenshot({ path });
  console.log(`docs/console/${name}${suffix}.png  ${Math.round(statSync(path).size / 1024)} KB`);
}

/** Every page, in one context (one size and colour scheme). */
async function photograph(page: Page, url: string, suffix: string): Promise<void> {
  const top = async () => {
    await page.evaluate(() => {
      window.scrollTo(0, 0);
    });
  };
  await page.goto(`${url}/ui/`);
  await page.locator('table.devices tbody tr').first().waitFor();
  await shot(page, 'devices', suffix);

  await page.getByLabel('Search').fill('alice');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('q') === 'alice');
  await shot(page, 'devices-search', suffix);

  await page.goto(`${url}/ui/`);
  const boxes = page.locator('tbody td.select input');
  await boxes.nth(1).check();
  await boxes.nth(2).check();
  await boxes.nth(4).check();
  await page.getByLabel('Field to set').selectOption({ label: 'Location' });
  await page.getByLabel('Location', { exact: true }).fill('Office');
  await page.locator('.bulk').evaluate((e) => {
    e.scrollIntoView({ block: 'center' });
  });
  await shot(page, 'devices-bulk', suffix);

  await page.goto(`${url}/ui/devices/new`);
  await page.getByRole('heading', { name: 'Add device' }).waitFor();
  await page.getByRole('button', { name: 'Make up a MAC' }).click();
  await page.getByLabel('Name', { exact: true }).fill('Hall switch');
  await page.getByLabel('Type').fill('Switch');
  await shot(page, 'device-new', suffix);

  await page.goto(`${url}/ui/devices/${consoleMac(4)}`);
  await page.getByRole('heading', { name: 'Details' }).waitFor();
  await page.locator('.timeline').first().waitFor();
  await top();
  await shot(page, 'device', suffix);
  await page.locator('legend', { hasText: 'Scanning and alerts' }).scrollIntoViewIfNeeded();
  await shot(page, 'device-details', suffix);

  await page.goto(`${url}/ui/events?type=Device%20Down,New%20Device,Connected`);
  await page.locator('tbody tr').first().waitFor();
  await shot(page, 'events', suffix);

  await page.goto(`${url}/ui/tools`);
  await page.locator('#trace-ip').fill('127.0.0.1');
  await page.getByRole('button', { name: 'Trace' }).click();
  await page.locator('section:has(#tool-traceroute) pre').waitFor({ timeout: 30_000 });
  await page
    .getByRole('button', { name: 'Trace' })
    .and(page.locator(':enabled'))
    .waitFor({ timeout: 60_000 });
  await top();
  await shot(page, 'tools', suffix);

  await page.goto(`${url}/ui/scan`);
  await page.locator('main h1').waitFor();
  await shot(page, 'scan', suffix);

  await page.goto(`${url}/ui/notifications`);
  await page.locator('main h1').waitFor();
  await shot(page, 'notifications', suffix);

  await page.goto(`${url}/ui/map`);
  await page.getByRole('button', { name: /^Expand Router/ }).click();
  await page.getByRole('button', { name: /^Expand Switch office/ }).click();
  // Clicking scrolled the map sideways to the buttons: back to the site's column and the page's top.
  await page.locator('.map-scroll').evaluate((e) => {
    e.scrollLeft = 0;
  });
  await top();
  await shot(page, 'map', suffix);

  await page.goto(`${url}/ui/settings`);
  await page.locator('.setting').first().waitFor();
  await shot(page, 'settings', suffix);

  await page.goto(`${url}/ui/probes`);
  await page.locator('tr[data-probe="branch"]').waitFor();
  await shot(page, 'probes', suffix);

  // "Add probe" with its token shown once. The probe is revoked again after the picture, so that
  // the next size's pictures start from the same list.
  const name = `lab${suffix.replace(/-/g, '')}`;
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('Site').fill('Lab');
  await page.getByRole('button', { name: 'Add probe' }).click();
  await page.getByLabel('Probe token').waitFor();
  await top();
  await shot(page, 'probes-added', suffix);
  await page.getByRole('button', { name: 'Done, I copied it' }).click();
  const row = page.locator(`tr[data-probe="${name}"]`);
  await row.getByRole('button', { name: 'Revoke' }).click();
  await row.getByRole('button', { name: 'Yes, revoke' }).click();
  await row.waitFor({ state: 'detached' });
}

async function signIn(browser: Browser, url: string): Promise<Cookie[]> {
  for (const phone of [false, true]) {
    // The sign-in page itself, in each size, light and dark (it needs no session).
    for (const colorScheme of ['light', 'dark'] as const) {
      const context = await browser.newContext(contextOptions(phone, colorScheme));
      const page = await context.newPage();
      await page.goto(`${url}/ui/`);
      await page.getByLabel('API token').waitFor();
      await shot(page, 'signin', suffixOf(phone, colorScheme));
      await context.close();
    }
  }
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${url}/ui/`);
  await page.getByLabel('API token').fill(benchToken);
  await page.keyboard.press('Enter');
  await page.locator('table.devices tbody tr').first().waitFor();
  const cookies = await context.cookies();
  await context.close();
  return cookies;
}

function contextOptions(phone: boolean, colorScheme: 'light' | 'dark') {
  return phone
    ? { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, colorScheme }
    : { viewport: { width: 1280, height: 860 }, colorScheme };
}

function suffixOf(phone: boolean, colorScheme: 'light' | 'dark'): string {
  return `${phone ? '-phone' : ''}${colorScheme === 'dark' ? '-dark' : ''}`;
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-shots-'));
  seedConsoleData(dataDir, 240);
  const server = await startChild(mainScript, {
    DATA_DIR: dataDir,
    API_TOKEN: benchToken,
    LOG_LEVEL: 'warn',
    WOL_BROADCAST: '127.0.0.1',
    WOL_PORT: '9',
    INTERNETINFO_URL: 'http://127.0.0.1:9/json',
    SPEEDTEST_BACKEND: 'builtin',
    SPEEDTEST_SERVER_URL: 'http://127.0.0.1:9',
    DNS_SERVER: '127.0.0.1:9',
    NOTIFY_NTFY_URL: 'http://127.0.0.1:9/netkeep-alerts',
    NOTIFY_NTFY_TOKEN: 'tk_example_secret',
  });
  const post = async (mac: string, body: Record<string, unknown>) => {
    const res = await fetch(`${server.url}/device/${mac}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${benchToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${mac}: ${res.status} ${await res.text()}`);
  };
  // A router; two switches under it (ports 1, 2); a few devices under each; a branch site.
  await post(consoleMac(0), { devName: 'Router', devType: 'Router' });
  await post(consoleMac(1), { devName: 'Switch office', devParentMAC: consoleMac(0), devParentPort: 1 });
  await post(consoleMac(2), { devName: 'Switch lab', devParentMAC: consoleMac(0), devParentPort: 2 });
  for (let i = 3; i < 9; i++) await post(consoleMac(i), { devParentMAC: consoleMac(1), devParentPort: i });
  for (let i = 9; i < 13; i++)
    await post(consoleMac(i), { devParentMAC: consoleMac(2), devParentPort: i - 8 });
  for (let i = 13; i < 16; i++) await post(consoleMac(i), { devSite: 'Branch office' });
  // Two probes: the branch office's, which has sent a cycle with its three devices (and has two
  // more cycles waiting in its spool), and the parents', which has not reported yet.
  const admin = async (path: string, body: unknown, token = benchToken) => {
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { token?: string };
  };
  const branch = await admin('/probes', { name: 'branch', site: 'Branch office' });
  await admin('/probes', { name: 'parents', site: 'Parents' });
  const now = Date.now();
  await admin(
    '/probes/cycles',
    {
      cycleId: randomUUID(),
      startedAt: new Date(now - 40_000).toISOString(),
      finishedAt: new Date(now - 30_000).toISOString(),
      subnets: ['192.168.50.0/24'],
      sightings: [13, 14, 15].map((i) => ({ mac: consoleMac(i), ip: `192.168.50.${i}` })),
      spooledCycles: 2,
    },
    branch.token,
  );

  const browser = await launchChromium();
  mkdirSync(outDir, { recursive: true });
  try {
    const cookies = await signIn(browser, server.url);
    for (const colorScheme of ['light', 'dark'] as const)
      for (const phone of [false, true]) {
        const context = await browser.newContext(contextOptions(phone, colorScheme));
        await context.addCookies(cookies);
        await photograph(await context.newPage(), server.url, suffixOf(phone, colorScheme));
        await context.close();
      }
  } finally {
    await browser.close();
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();

/**
 * Screenshots of the network map and the settings page for docs/console/
 * (`node dist/bench/screenshots-console2.js`): desktop and phone widths, light and dark. Seeds an
 * inventory with a small network tree (a router, switches under it, a second site), starts the real
 * server on loopback and photographs each page with headless Chromium. Talks only to 127.0.0.1.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
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

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-shots-'));
  seedConsoleData(dataDir, 60);
  const server = await startChild(mainScript, {
    DATA_DIR: dataDir,
    API_TOKEN: benchToken,
    LOG_LEVEL: 'warn',
    INTERNETINFO_URL: 'http://127.0.0.1:9/json',
    SPEEDTEST_BACKEND: 'builtin',
    SPEEDTEST_SERVER_URL: 'http://127.0.0.1:9',
    DNS_SERVER: '127.0.0.1:9',
    SCAN_INTERVAL: '120',
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

  const browser = await launchChromium();
  mkdirSync(outDir, { recursive: true });
  try {
    for (const colorScheme of ['light', 'dark'] as const)
      for (const phone of [false, true]) {
        const context = await browser.newContext(
          phone
            ? {
                viewport: { width: 390, height: 844 },
                deviceScaleFactor: 2,
                isMobile: true,
                hasTouch: true,
                colorScheme,
              }
            : { viewport: { width: 1280, height: 860 }, colorScheme },
        );
        const page = await context.newPage();
        const suffix = `${phone ? '-phone' : ''}${colorScheme === 'dark' ? '-dark' : ''}`;
        const shot = async (name: string) => {
          await settle(page);
          await page.screenshot({ path: join(outDir, `${name}${suffix}.png`) });
          console.log(`docs/console/${name}${suffix}.png`);
        };
        await page.goto(`${server.url}/ui/map`);
        await page.getByLabel('API token').fill(benchToken);
        await page.keyboard.press('Enter');
        await page.getByRole('button', { name: /^Expand Router/ }).click();
        await page.getByRole('button', { name: /^Expand Switch office/ }).click();
        // Show the router's subtree from its first row, the site root's column included.
        await page.locator(`[data-node="${consoleMac(1)}"]`).evaluate((e) => {
          e.scrollIntoView({ block: 'start' });
        });
        await page.locator('.map-scroll').evaluate((e) => {
          e.scrollLeft = 0;
        });
        await page.evaluate(() => {
          window.scrollTo(0, 0);
        });
        await shot('map');
        await page.goto(`${server.url}/ui/settings`);
        await page.locator('.setting').first().waitFor();
        await shot('settings');
        await context.close();
      }
  } finally {
    await browser.close();
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();

/**
 * Takes the screenshots of docs/console/ (`node dist/bench/screenshots.js`): seeds an inventory,
 * starts the real server on loopback, signs in with headless Chromium and photographs each page,
 * plus the device list on a phone-sized screen. Talks only to 127.0.0.1.
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
  await page.waitForTimeout(150);
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
  });
  const browser = await launchChromium();
  mkdirSync(outDir, { recursive: true });
  try {
    const context = await browser.newContext({
      viewport: { width: 1280, height: 860 },
      colorScheme: 'light',
    });
    const page = await context.newPage();
    const shot = async (name: string) => {
      await settle(page);
      await page.screenshot({ path: join(outDir, `${name}.png`) });
      console.log(`docs/console/${name}.png`);
    };
    await page.goto(`${server.url}/ui/`);
    await page.getByLabel('API token').waitFor();
    await shot('signin');
    await page.getByLabel('API token').fill(benchToken);
    await page.keyboard.press('Enter');
    await page.locator('table.devices tbody tr').first().waitFor();
    await shot('devices');
    await page.getByLabel('Search').fill('alice');
    await page.waitForTimeout(400);
    await shot('devices-search');
    await page.goto(`${server.url}/ui/devices/${consoleMac(4)}`);
    await page.getByRole('heading', { name: 'Details' }).waitFor();
    await shot('device');
    await page.getByLabel('Comments').fill('Wall mount, living room');
    await page.getByLabel('Alert when down').check();
    await page.locator('legend', { hasText: 'Scanning and alerts' }).scrollIntoViewIfNeeded();
    await shot('device-details');
    await page.goto(`${server.url}/ui/events?type=Device%20Down,New%20Device`);
    await page.locator('tbody tr').first().waitFor();
    await shot('events');
    await page.goto(`${server.url}/ui/tools`);
    await page.locator('#trace-ip').fill('127.0.0.1');
    await page.getByRole('button', { name: 'Trace' }).click();
    await page.locator('section:has(#tool-traceroute) pre').waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Ask' }).click();
    await page.locator('section:has(#tool-internetinfo) .note.error').waitFor({ timeout: 30_000 });
    await shot('tools');
    await page.goto(`${server.url}/ui/scan`);
    await shot('scan');
    await page.goto(`${server.url}/ui/notifications`);
    await shot('notifications');
    const phone = await browser.newContext({
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
    });
    const cookies = await context.cookies();
    await phone.addCookies(cookies);
    const phonePage = await phone.newPage();
    await phonePage.goto(`${server.url}/ui/`);
    await phonePage.locator('table.devices tbody tr').first().waitFor();
    await settle(phonePage);
    await phonePage.screenshot({ path: join(outDir, 'devices-phone.png') });
    console.log('docs/console/devices-phone.png');
  } finally {
    await browser.close();
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();

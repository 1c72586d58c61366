/**
 * What a newcomer met on a phone (390 pixels wide), in Chromium against the real server with a
 * seeded inventory and its history: the device list and the event tables fit the screen (no
 * sideways scrolling; an event is one block with its time, type and device); the device page's
 * counter says what it counts beside the event list of the same period; the map's "Add an
 * unmanaged switch" creates a Switch with a made-up, locally administered MAC.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { consoleMac, seedConsoleData } from '../../bench/console-seed.js';
import { chromiumSkipReason, launchChromium } from '../helpers/browser.js';
import { TestServer } from '../helpers/server.js';
import { tempDir } from '../helpers/temp-dirs.js';

const skip = chromiumSkipReason();

describe('the console on a phone', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    const dataDir = tempDir('netkeep-phone-');
    seedConsoleData(dataDir, 40, Date.now(), 3);
    server = await TestServer.start({ dataDir });
    browser = await launchChromium();
    const context = await browser.newContext({
      viewport: { width: 390, height: 844 },
      isMobile: true,
      hasTouch: true,
    });
    page = await context.newPage();
    await page.goto(`${server.url}/ui/`);
    await page.getByLabel('API token').fill(server.token);
    await page.keyboard.press('Enter');
    await page.locator('table.devices tbody tr').first().waitFor();
  });
  after(async () => {
    await browser.close();
    await server.stop();
  });

  /** The table's box scrolls sideways (its content is wider than the screen allows). */
  const overflows = (selector: string) =>
    page
      .locator(selector)
      .first()
      .evaluate((e) => e.scrollWidth > e.clientWidth + 1);

  test('the device list fits: checkbox, name, status and address', async () => {
    assert.equal(await overflows('.table-wrap'), false);
  });

  test('the event log: one block per event, nothing off the screen', async () => {
    await page.goto(`${server.url}/ui/events`);
    const first = page.locator('table.stack tbody tr').first();
    await first.waitFor();
    assert.equal(await overflows('.table-wrap'), false);
    const box = await first.boundingBox();
    const time = await first.locator('time').boundingBox();
    const device = await first.locator('a').boundingBox();
    assert.ok(box && time && device);
    assert.ok(device.y > time.y, 'the device is under the time');
    assert.ok(device.x + device.width <= box.x + box.width + 1, 'the device name is inside its block');
  });

  test('the device page: the counter says what it counts, the list names its period', async () => {
    await page.goto(`${server.url}/ui/devices/${consoleMac(4)}`);
    await page.getByRole('heading', { name: 'Events, last 7 days' }).waitFor();
    assert.equal(
      await page.locator('dt', { hasText: 'Other events' }).getAttribute('title'),
      'Events other than Connected and Disconnected',
    );
    assert.equal(await overflows('#events ~ .table-wrap, section:has(#events) .table-wrap'), false);
  });

  test('the map\'s "Add an unmanaged switch" makes a Switch with a locally administered MAC', async () => {
    await page.goto(`${server.url}/ui/map`);
    await page.getByRole('link', { name: 'Add an unmanaged switch' }).click();
    await page.getByRole('heading', { name: 'Add device' }).waitFor();
    const mac = await page.getByLabel('MAC address').inputValue();
    assert.match(mac, /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
    assert.equal(parseInt(mac.slice(0, 2), 16) & 0x03, 0x02, 'locally administered, unicast');
    assert.equal(await page.getByLabel('Type').inputValue(), 'Switch');
    await page.getByRole('button', { name: 'Add device' }).click();
    await page.getByRole('heading', { name: 'Unmanaged switch' }).waitFor();
    const d = (await server.request('GET', `/device/${mac}`)).json;
    assert.equal(d.devType, 'Switch');
    assert.equal(d.devRandomMac, 1);
  });
});

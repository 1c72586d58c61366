/**
 * The device list's bulk edit and "add device" in Debian's Chromium against the real server: rows
 * selected one by one, by page and by filter; one field set for all of them (a device deleted
 * meanwhile is reported and the rest change); deletion with its confirmation; a device added from
 * its page. Each action is checked in what the API then answers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumSkipReason, launchChromium } from '../helpers/browser.js';
import { TestServer } from '../helpers/server.js';

const mac = (n: number) => `02:cc:00:00:00:${n.toString(16).padStart(2, '0')}`;
const skip = chromiumSkipReason();

describe('bulk edit and add device in Chromium', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    server = await TestServer.start();
    for (let n = 1; n <= 30; n++) {
      const res = await server.request('POST', `/device/${mac(n)}`, {
        body: { createNew: true, devName: `host${String(n)}`, devGroup: 'Old' },
      });
      assert.equal(res.status, 200, res.text);
    }
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.goto(`${server.url}/ui/?limit=25`);
    await page.getByLabel('API token').fill(server.token);
    await page.keyboard.press('Enter');
    await page.getByRole('link', { name: 'host1', exact: true }).waitFor();
  });
  after(async () => {
    await browser.close();
    await server.stop();
  });

  const device = async (m: string) => (await server.request('GET', `/device/${m}`)).json;

  test('set a field for the selected rows; one deleted meanwhile is reported, the others change', async () => {
    for (const n of [1, 2, 3]) await page.getByLabel(`Select host${String(n)}`, { exact: true }).check();
    await page.getByRole('heading', { name: '3 devices selected' }).waitFor();
    // Another client deletes one of them while the page still lists it.
    assert.equal((await server.request('DELETE', `/device/${mac(2)}/delete`)).status, 200);
    await page.getByLabel('Field to set').selectOption({ label: 'Group' });
    await page.getByLabel('Group', { exact: true }).fill('Lab');
    await page.getByRole('button', { name: 'Set for 3 devices' }).click();
    const outcome = page.getByRole('status').filter({ hasText: 'devices changed' });
    await outcome.waitFor();
    assert.match((await outcome.textContent()) ?? '', /2 devices changed\. 1 could not be changed/);
    assert.match((await outcome.textContent()) ?? '', new RegExp(`${mac(2)}: Device ${mac(2)} not found`));
    assert.equal((await device(mac(1))).devGroup, 'Lab');
    assert.equal((await device(mac(3))).devGroup, 'Lab');
    assert.equal((await device(mac(4))).devGroup, 'Old');
    // The one that failed stays selected; clear it.
    await page.getByRole('heading', { name: '1 device selected' }).waitFor();
    await page.getByRole('button', { name: 'Clear selection' }).click();
    await page.getByRole('heading', { name: /selected/ }).waitFor({ state: 'detached' });
  });

  test('select the page, then the whole filter; a flag set for all of them', async () => {
    await page.getByLabel('Select every device on this page').check();
    await page.getByRole('heading', { name: '25 devices selected' }).waitFor();
    await page.getByRole('button', { name: 'Select all 29 listed' }).click();
    await page.getByRole('heading', { name: '29 devices selected' }).waitFor();
    await page.getByLabel('Field to set').selectOption({ label: 'Alert when down' });
    await page.getByLabel('Alert when down').check();
    await page.getByRole('button', { name: 'Set for 29 devices' }).click();
    await page.getByRole('status').filter({ hasText: '29 devices changed.' }).waitFor();
    const list = await server.request('GET', '/devices?limit=100');
    const items = list.json.devices as { devAlertDown: number }[];
    assert.equal(items.length, 29);
    assert.ok(items.every((d) => d.devAlertDown === 1));
    await page.getByRole('heading', { name: /selected/ }).waitFor({ state: 'detached' });
  });

  test('delete the selected devices after the confirmation', async () => {
    await page.getByLabel('Select host10', { exact: true }).check();
    await page.getByLabel('Select host11', { exact: true }).check();
    await page.getByRole('button', { name: 'Delete 2 devices…' }).click();
    await page.getByRole('button', { name: 'Delete 2 devices', exact: true }).click();
    await page.getByRole('status').filter({ hasText: '2 devices deleted.' }).waitFor();
    assert.equal((await server.request('GET', `/device/${mac(10)}`)).status, 404);
    assert.equal((await server.request('GET', `/device/${mac(11)}`)).status, 404);
    await page.getByRole('link', { name: 'host10', exact: true }).waitFor({ state: 'detached' });
  });

  test('add a device from its page: the API has it with the fields given', async () => {
    await page.getByRole('button', { name: 'Add device' }).click();
    await page.getByRole('heading', { name: 'Add device' }).waitFor();
    await page.getByLabel('MAC address').fill('02-CC-00-00-00-99');
    await page.getByLabel('Name', { exact: true }).fill('Garage camera');
    await page.getByLabel('Owner').fill('Bea');
    await page.getByLabel('Favorite').check();
    await page.getByRole('button', { name: 'Add device' }).click();
    await page.getByRole('heading', { name: 'Garage camera' }).waitFor();
    const d = await device('02:cc:00:00:00:99');
    assert.equal(d.devName, 'Garage camera');
    assert.equal(d.devOwner, 'Bea');
    assert.equal(d.devFavorite, 1);
    // The same MAC again: the server's sentence, shown on the page.
    await page.goto(`${server.url}/ui/devices/new`);
    await page.getByLabel('MAC address').fill('02:cc:00:00:00:99');
    await page.getByRole('button', { name: 'Add device' }).click();
    await page.getByRole('alert').filter({ hasText: 'already exists' }).waitFor();
  });
});

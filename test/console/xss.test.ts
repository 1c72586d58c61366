/**
 * Device fields holding HTML or script are shown as text on every page (list, search, bulk edit,
 * device page, map, events, tools, scan, notifications, settings): the markup appears literally
 * and no element of it ever exists in the document.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { consoleMac, seedConsoleData } from '../../bench/console-seed.js';
import { chromiumSkipReason, launchChromium } from '../helpers/browser.js';
import { TestServer } from '../helpers/server.js';
import { tempDir } from '../helpers/temp-dirs.js';

const hostile = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>';
const parent = '02:ff:00:00:00:01';
const child = '02:ff:00:00:00:02';
const skip = chromiumSkipReason();

describe('HTML in device fields is text on every page', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    // A few devices with history, so that the event log lists a device whose name is hostile.
    const dataDir = tempDir('netkeep-xss-');
    seedConsoleData(dataDir, 3, Date.now(), 1);
    server = await TestServer.start({ dataDir });
    for (let i = 0; i < 3; i++) {
      const res = await server.request('POST', `/device/${consoleMac(i)}`, {
        body: { devName: `${hostile} seeded` },
      });
      assert.equal(res.status, 200, res.text);
    }
    const fields = { devOwner: hostile, devVendor: hostile, devGroup: hostile, devLocation: hostile };
    for (const [mac, extra] of [
      [parent, { devName: `${hostile} parent`, devType: hostile, devComments: hostile }],
      [child, { devName: `${hostile} child`, devParentMAC: parent, devParentPort: 1 }],
    ] as const) {
      const res = await server.request('POST', `/device/${mac}`, {
        body: { createNew: true, ...fields, ...extra },
      });
      assert.equal(res.status, 200, res.text);
    }
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.goto(`${server.url}/ui/`);
    await page.getByLabel('API token').fill(server.token);
    await page.keyboard.press('Enter');
  });
  after(async () => {
    await browser.close();
    await server.stop();
  });

  /** No element made from the hostile text exists, and nothing ran. */
  const assertInert = async (where: string) => {
    assert.equal(await page.locator('img[src="x"], main script').count(), 0, `${where}: an element was made`);
    assert.notEqual(await page.title(), 'pwned', `${where}: script ran`);
  };

  test('device list, search and bulk edit', async () => {
    const name = page.getByRole('link', { name: `${hostile} parent` });
    await name.waitFor();
    assert.equal(await name.textContent(), `${hostile} parent`);
    await assertInert('list');
    await page.getByLabel('Search').fill('<img');
    await page.getByRole('link', { name: `${hostile} child` }).waitFor();
    await assertInert('search');
    await page.getByLabel(`Select ${hostile} child`).check();
    await page.getByLabel('Field to set').selectOption({ label: 'Owner' });
    await page.getByLabel('Owner', { exact: true }).fill(`${hostile} bulk`);
    await page.getByRole('button', { name: 'Set for 1 device' }).click();
    await page.getByRole('status').filter({ hasText: '1 device changed.' }).waitFor();
    await page.getByRole('cell', { name: `${hostile} bulk` }).waitFor();
    assert.equal((await server.request('GET', `/device/${child}`)).json.devOwner, `${hostile} bulk`);
    await assertInert('bulk edit');
  });

  test('device page, with its form', async () => {
    await page.goto(`${server.url}/ui/devices/${parent}`);
    await page.getByRole('heading', { name: `${hostile} parent` }).waitFor();
    assert.equal(await page.getByLabel('Comments').inputValue(), hostile);
    await assertInert('device page');
  });

  test('map, events, tools, scan, notifications, settings', async () => {
    await page.goto(`${server.url}/ui/map`);
    await page
      .getByRole('button', { name: /^Expand / })
      .first()
      .click();
    const node = page.locator(`[data-node="${child}"]`);
    await node.waitFor();
    assert.match((await node.textContent()) ?? '', /<img src=x onerror=/);
    await assertInert('map');
    await page.goto(`${server.url}/ui/events`);
    const logged = page.getByRole('link', { name: `${hostile} seeded` }).first();
    await logged.waitFor();
    assert.equal(await logged.textContent(), `${hostile} seeded`);
    await assertInert('events');
    for (const path of ['/tools', '/scan', '/notifications', '/settings', '/devices/new']) {
      await page.goto(`${server.url}/ui${path}`);
      await page.locator('main h1').first().waitFor();
      await assertInert(path);
    }
  });
});

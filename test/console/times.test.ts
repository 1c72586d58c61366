/**
 * Times in the browser's zone (a context in America/New_York against a server that speaks UTC):
 * the device list and the device page show local times, the edit form holds local times (never raw
 * UTC text) and a local time typed into it reaches the API as the right UTC instant.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumSkipReason, launchChromium } from '../helpers/browser.js';
import { TestServer } from '../helpers/server.js';

const mac = '02:ee:11:00:00:01';
const skip = chromiumSkipReason();

describe('local times in Chromium', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    server = await TestServer.start();
    const res = await server.request('POST', `/device/${mac}`, {
      body: {
        createNew: true,
        devName: 'Clock',
        devFirstConnection: '2026-01-15T10:20:30Z',
        devLastConnection: '2026-07-04T03:05:00Z',
      },
    });
    assert.equal(res.status, 200, res.text);
    browser = await launchChromium();
    const context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      timezoneId: 'America/New_York',
    });
    page = await context.newPage();
    await page.goto(`${server.url}/ui/`);
    await page.getByLabel('API token').fill(server.token);
    await page.keyboard.press('Enter');
  });
  after(async () => {
    await browser.close();
    await server.stop();
  });

  test('the list shows the last sighting in local time (EDT in July)', async () => {
    const row = page.getByRole('row').filter({ hasText: 'Clock' });
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /2026-07-03 23:05/);
  });

  test('the edit form holds local times, and a local time typed in is stored as UTC', async () => {
    await page.getByRole('link', { name: 'Clock' }).click();
    const first = page.getByLabel('First seen');
    await first.waitFor();
    assert.equal(await first.getAttribute('type'), 'datetime-local');
    assert.equal(await first.inputValue(), '2026-01-15T05:20:30', 'EST is UTC-5');
    assert.equal(
      await page.getByLabel('Last seen', { exact: true }).inputValue(),
      '2026-07-03T23:05',
      'whole minutes without seconds',
    );
    // No input of the form shows raw UTC text.
    const values = await page
      .locator('form[aria-label="Device details"] input, form[aria-label="Device details"] textarea')
      .evaluateAll((inputs) => inputs.map((i) => (i as HTMLInputElement).value));
    assert.ok(
      values.every((v) => !/\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?(\.\d+)?Z/.test(v)),
      JSON.stringify(values),
    );
    await first.fill('2026-01-15T07:00:00');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    const d = (await server.request('GET', `/device/${mac}`)).json;
    assert.equal(d.devFirstConnection, '2026-01-15T12:00:00Z');
    assert.equal(d.devLastConnection, '2026-07-04T03:05:00Z', 'a time not edited is not sent');
  });
});

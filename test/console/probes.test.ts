/**
 * The probes page (/ui/probes) in Debian's Chromium against the real server: "Add probe" makes a
 * probe the API then lists, and shows its token once with the lines that start the probe (the
 * token works: a cycle uploaded with it is applied); the list shows status, site, subnets, last
 * cycle and spool; revoke asks first, and then the API no longer lists the probe and refuses its
 * token. On a phone-sized screen the page does not scroll sideways.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumSkipReason, launchChromium } from '../helpers/browser.js';
import { TestServer } from '../helpers/server.js';

const skip = chromiumSkipReason();

interface ProbeRow {
  id: string;
  name: string;
  site: string;
  status: string;
  subnets: string[];
  spooledCycles: number;
}

describe('probes page in Chromium', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  let token = '';

  const listed = async (): Promise<ProbeRow[]> => {
    const res = await server.request('GET', '/probes');
    assert.equal(res.status, 200, res.text);
    return (res.json as unknown as { probes: ProbeRow[] }).probes;
  };
  const upload = (probeToken: string) => {
    const now = new Date();
    return server.request('POST', '/probes/cycles', {
      token: probeToken,
      body: {
        cycleId: randomUUID(),
        startedAt: new Date(now.getTime() - 5000).toISOString(),
        finishedAt: now.toISOString(),
        subnets: ['10.77.0.0/24'],
        sightings: [{ mac: '02:77:00:00:00:01', ip: '10.77.0.5' }],
        spooledCycles: 3,
      },
    });
  };

  before(async () => {
    server = await TestServer.start();
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
    await page.goto(`${server.url}/ui/probes`);
    await page.getByLabel('API token').fill(server.token);
    await page.keyboard.press('Enter');
  });
  after(async () => {
    await browser.close();
    await server.stop();
  });

  test('the navigation leads to the page; with no probe it says so', async () => {
    await page.getByRole('link', { name: 'Probes' }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Probes' }).getAttribute('aria-current'), 'page');
    await page.getByText('No probes yet').waitFor();
  });

  test('"Add probe" makes the probe and shows its working token once, with the start lines', async () => {
    await page.getByLabel('Name').fill('office');
    await page.getByLabel('Site').fill('Main office');
    await page.getByRole('button', { name: 'Add probe' }).click();
    const shown = page.getByRole('status', { name: 'Probe office added' });
    await shown.waitFor();
    token = await page.getByLabel('Probe token').inputValue();
    assert.match(token, /^[0-9a-f-]{36}\.[A-Za-z0-9_-]{43}$/);
    const npmLine = (await page.getByLabel('Start with npm').textContent()) ?? '';
    assert.ok(npmLine.includes(`PROBE_HUB_URL=${server.url} PROBE_TOKEN=${token}`), npmLine);
    assert.match(npmLine, /npm start$/);
    const envLines = (await page.getByLabel('Start with Docker Compose').textContent()) ?? '';
    assert.ok(envLines.includes(`PROBE_HUB_URL=${server.url}\nPROBE_TOKEN=${token}\n`), envLines);
    await shown.getByText('docker compose up -d').waitFor();

    const probes = await listed();
    assert.deepEqual(
      probes.map((p) => [p.name, p.site, p.status]),
      [['office', 'Main office', 'never']],
    );
    await page.locator('tr[data-probe="office"]').getByText('never reported').waitFor();
    assert.ok(
      !JSON.stringify(probes).includes(token.split('.')[1] ?? token),
      'GET /probes never holds the token',
    );

    // The token is the probe's: a cycle sent with it is applied.
    const res = await upload(token);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.applied, true);

    // Once dismissed, the token is gone from the page for good.
    await page.getByRole('button', { name: 'Done, I copied it' }).click();
    assert.equal(await page.getByLabel('Probe token').count(), 0);
    assert.equal(await page.getByText(token).count(), 0);
  });

  test('the list shows status, subnets, last cycle and spool as the API has them', async () => {
    await page.reload();
    const row = page.locator('tr[data-probe="office"]');
    await row.getByText('online').waitFor();
    const [probe] = await listed();
    assert.equal(probe?.status, 'online');
    assert.deepEqual(probe.subnets, ['10.77.0.0/24']);
    assert.match((await row.textContent()) ?? '', /10\.77\.0\.0\/24/);
    assert.equal((await row.locator('td[data-label="Spooled"]').textContent())?.trim(), '3');
    assert.equal(await row.locator('.badge').getAttribute('class'), 'badge ok');
    // Last cycle in the browser's zone, the UTC instant as its tooltip.
    const time = row.locator('td[data-label="Last cycle"] time');
    assert.ok(Date.parse((await time.getAttribute('datetime')) ?? '') > 0);
  });

  test("the device list shows each device's site and filters by it as the API does", async () => {
    const res = await server.request('POST', '/device/02:77:00:00:00:09', {
      body: { createNew: true, devName: 'Hub printer' },
    });
    assert.equal(res.status, 200, res.text);
    await page.goto(`${server.url}/ui/?sort=devSite`);
    await page.locator('a.device-link', { hasText: 'Hub printer' }).waitFor();
    const probeRow = page.locator('tr', { has: page.locator('a[href="/ui/devices/02:77:00:00:00:01"]') });
    await probeRow.waitFor();
    assert.match((await probeRow.textContent()) ?? '', /Main office/);

    await page.getByLabel('Site').selectOption('Main office');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('site') === 'Main office');
    await page.locator('a.device-link', { hasText: 'Hub printer' }).waitFor({ state: 'detached' });
    const api = await server.request('GET', '/devices?site=Main%20office');
    const expected = (api.json.devices as { devMac: string }[]).map((d) => d.devMac);
    assert.deepEqual(expected, ['02:77:00:00:00:01']);
    const shown = await page
      .locator('tbody a.device-link')
      .evaluateAll((links) => links.map((a) => decodeURIComponent(a.getAttribute('href') ?? '').slice(12)));
    assert.deepEqual(shown, expected);

    await page.getByLabel('Site').selectOption({ label: 'No site' });
    await page.locator('a.device-link', { hasText: 'Hub printer' }).waitFor();
    assert.equal(await probeRow.count(), 0);
    await page.goto(`${server.url}/ui/probes`);
  });

  test("the device page says the device's site and the probe that saw it, as the API has them", async () => {
    const mac = '02:77:00:00:00:01';
    const device = (await server.request('GET', `/device/${mac}`)).json;
    assert.deepEqual([device.devSite, device.devSyncHubNode], ['Main office', 'office']);
    await page.goto(`${server.url}/ui/devices/${mac}`);
    const site = page.locator('.summary .site');
    await site.waitFor();
    assert.equal(((await site.textContent()) ?? '').trim(), '· site Main office (probe office)');
    await site.getByRole('link', { name: 'Main office' }).click();
    await page.waitForFunction(() => new URL(location.href).searchParams.get('site') === 'Main office');
    await page.locator(`a[href="/ui/devices/${mac}"]`).waitFor();
    await page.goto(`${server.url}/ui/probes`);
  });

  test('a bad name is refused with the server sentence and changes nothing', async () => {
    await page.getByLabel('Name').fill('bad/name');
    await page.getByLabel('Site').fill('x');
    await page.getByRole('button', { name: 'Add probe' }).click();
    await page.getByRole('alert').waitFor();
    assert.equal((await listed()).length, 1);
    await page.getByLabel('Name').fill('');
    await page.getByLabel('Site').fill('');
  });

  test('revoke asks first; then the API lists no probe and refuses its token', async () => {
    const row = page.locator('tr[data-probe="office"]');
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await listed()).length, 1, 'Cancel revokes nothing');
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Yes, revoke' }).click();
    await page.getByText('No probes yet').waitFor();
    assert.equal((await listed()).length, 0);
    assert.equal((await upload(token)).status, 403);
  });

  test('on a phone the page fits the screen', async () => {
    const made = await server.request('POST', '/probes', { body: { name: 'parents', site: 'Parents' } });
    assert.equal(made.status, 200, made.text);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    await page.locator('tr[data-probe="parents"]').getByText('never reported').waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px`);
    assert.ok(await page.getByRole('button', { name: 'Revoke' }).isVisible());
  });
});

/**
 * The device page's open ports (DESIGN 18) in Debian's Chromium against the real server: the ports
 * the port watch stored (written here as the watch writes them, through WatchStore, into the
 * running server's database) are listed as `GET /device/<mac>/ports` answers them, each with its
 * first-seen time in the browser's zone (the UTC instant as the time's datetime).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { openSqliteStore } from '../../src/store/index.js';
import type { OpenPort } from '../../src/store/watch.js';
import { chromiumSkipReason, launchChromium } from '../helpers/browser.js';
import { TestServer } from '../helpers/server.js';

const skip = chromiumSkipReason();
const mac = '02:ab:00:00:00:01';

interface StoredPort {
  port: number;
  protocol: string;
  service: string;
  firstSeen: string;
}

describe('device page: open ports in Chromium', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    server = await TestServer.start();
    const res = await server.request('POST', `/device/${mac}`, {
      body: { createNew: true, devName: 'Lab NAS', devWatchPorts: 1, devLastIP: '10.9.0.2' },
    });
    assert.equal(res.status, 200, res.text);
    // Through the store gate, as the port watch writes (the server's own store sees the same file).
    const store = openSqliteStore({ DATA_DIR: server.dataDir });
    try {
      const port = (n: number, service: string, product = ''): OpenPort => ({
        port: n,
        protocol: 'tcp',
        service,
        product,
        version: '',
      });
      const noEvents = () => ({ events: [] });
      // 22 open since the first scan, 445 found by the second.
      await store.watch.recordPortScans(
        [{ mac, ports: [port(22, 'ssh', 'OpenSSH')] }],
        new Date('2026-11-20T08:00:00Z'),
        noEvents,
      );
      await store.watch.recordPortScans(
        [{ mac, ports: [port(22, 'ssh', 'OpenSSH'), port(445, 'microsoft-ds')] }],
        new Date('2026-11-21T19:30:00Z'),
        noEvents,
      );
    } finally {
      await store.close();
    }
    browser = await launchChromium();
    const context = await browser.newContext({ timezoneId: 'America/New_York' });
    page = await context.newPage();
    await page.goto(`${server.url}/ui/devices/${mac}`);
    await page.getByLabel('API token').fill(server.token);
    await page.keyboard.press('Enter');
  });
  after(async () => {
    await browser.close();
    await server.stop();
  });

  test('lists the stored ports as the API has them, each first seen in local time', async () => {
    const api = await server.request('GET', `/device/${mac}/ports`);
    assert.equal(api.status, 200, api.text);
    const stored = api.json.ports as StoredPort[];
    assert.deepEqual(
      stored.map((p) => [p.port, p.firstSeen]),
      [
        [22, '2026-11-20T08:00:00Z'],
        [445, '2026-11-21T19:30:00Z'],
      ],
    );
    const card = page.locator('section[aria-labelledby="ports"]');
    await card.locator('tbody tr').nth(1).waitFor();
    const rows = await card.locator('tbody tr').evaluateAll((trs) =>
      trs.map((tr) => ({
        port: tr.querySelector('td')?.textContent,
        service: tr.querySelectorAll('td')[1]?.textContent,
        time: tr.querySelector('time')?.textContent,
        instant: tr.querySelector('time')?.getAttribute('datetime'),
      })),
    );
    assert.deepEqual(rows, [
      { port: '22/tcp', service: 'ssh', time: '2026-11-20 03:00', instant: '2026-11-20T08:00:00Z' },
      { port: '445/tcp', service: 'microsoft-ds', time: '2026-11-21 14:30', instant: '2026-11-21T19:30:00Z' },
    ]);
  });
});

/**
 * The network map (/ui/map) in Debian's Chromium against the real server: it draws a parent and a
 * child with their status (collapsed until expanded), one root per site, finds a device by search,
 * and drag-to-parent changes what the API answers; a drag that would put a device under its own
 * child is refused with a message and changes nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumSkipReason, launchChromium } from '../helpers/browser.js';
import { TestServer } from '../helpers/server.js';

const router = '02:ee:00:00:00:01';
const sw = '02:ee:00:00:00:02';
const laptop = '02:ee:00:00:00:03';
const branch = '02:ee:00:00:00:04';
const scanned = '02:ee:00:00:00:05';

const skip = chromiumSkipReason();

describe('network map in Chromium', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    server = await TestServer.start();
    const devices: [string, Record<string, unknown>][] = [
      [router, { devName: 'Router', devPresentLastScan: 1 }],
      [sw, { devName: 'Office switch', devParentMAC: router, devParentPort: 3, devAlertDown: 1 }],
      [laptop, { devName: 'Laptop <i>x</i>', devPresentLastScan: 1 }],
      [branch, { devName: 'Branch printer', devSite: 'Branch office' }],
      // What the hub's own scan marks with SITE_NAME (default "local"): the same site as no site.
      [scanned, { devName: 'Scanned NAS', devSite: 'local' }],
    ];
    for (const [mac, fields] of devices) {
      const res = await server.request('POST', `/device/${mac}`, { body: { createNew: true, ...fields } });
      assert.equal(res.status, 200, res.text);
    }
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
    await page.goto(`${server.url}/ui/map`);
    await page.getByLabel('API token').fill(server.token);
    await page.keyboard.press('Enter');
  });
  after(async () => {
    await browser.close();
    await server.stop();
  });

  const node = (mac: string) => page.locator(`[data-node="${mac}"]`);

  test('draws a parent and, once expanded, its child with their status; one root per site', async () => {
    await page.getByRole('treeitem', { name: 'Site local' }).waitFor();
    await page.getByRole('treeitem', { name: 'Site Branch office' }).waitFor();
    await node(scanned).waitFor();
    assert.equal(await page.getByRole('treeitem', { name: 'Site local' }).count(), 1, 'one root for the hub');
    assert.deepEqual(
      await page
        .locator('[data-node^="site:"]')
        .evaluateAll((roots) => roots.map((r) => r.getAttribute('data-node'))),
      ['site:local', 'site:Branch office'],
      "the hub's own site first",
    );
    await page.getByRole('treeitem', { name: 'Router, On-line' }).waitFor();
    assert.equal(await node(router).getAttribute('data-status'), 'On-line');
    assert.equal(await node(sw).count(), 0, 'subtrees start collapsed');
    await page.getByRole('button', { name: 'Expand Router (1)' }).click();
    await page.getByRole('treeitem', { name: 'Office switch, Down' }).waitFor();
    assert.equal(await node(sw).getAttribute('data-status'), 'Down');
    assert.match((await node(sw).textContent()) ?? '', /port 3/);
    assert.match((await node(laptop).textContent()) ?? '', /Laptop <i>x<\/i>/, 'HTML in a name is text');
    assert.equal(await node(laptop).locator('i').count(), 0);
    // The router's node sits left of its child's (the tree grows to the right).
    const parentBox = await node(router).boundingBox();
    const childBox = await node(sw).boundingBox();
    assert.ok(parentBox && childBox && parentBox.x < childBox.x);
  });

  test('drag a device onto another: the API answers the new parent', async () => {
    await node(laptop).dragTo(node(sw));
    await page.getByText(/now hangs under Office switch/).waitFor();
    const res = await server.request('GET', `/device/${laptop}`);
    assert.equal(res.json.devParentMAC, sw);
    await node(laptop).waitFor();
  });

  test('a drag that puts a device under its own child is refused, client and server', async () => {
    await node(router).dragTo(node(sw));
    await page.getByRole('alert').filter({ hasText: 'cannot hang under its own descendant' }).waitFor();
    assert.equal((await server.request('GET', `/device/${router}`)).json.devParentMAC, '');
    const direct = await server.request('POST', `/device/${router}`, { body: { devParentMAC: laptop } });
    assert.equal(direct.status, 400);
    assert.equal(direct.json.code, 'PARENT_CYCLE');
  });

  test('search opens the subtree of a device and focuses it', async () => {
    await page.getByRole('button', { name: 'Collapse Router (1)' }).click();
    await node(sw).waitFor({ state: 'detached' });
    await page.getByLabel('Find a device').fill('laptop');
    await page.getByRole('button', { name: 'Find' }).click();
    await node(laptop).waitFor();
    await page.waitForFunction((mac) => document.activeElement?.getAttribute('data-node') === mac, laptop);
  });

  test('a subtree reads downwards: no child above its parent, no two nodes on one spot', async () => {
    // Two switches under the site, the first collapsed: the second is pushed down below it, and
    // its children must move down with it (a tidy tree centres them on where it was).
    const switches = ['02:ee:00:00:01:00', '02:ee:00:00:02:00'];
    const ports = (s: number) => [1, 2, 3].map((p) => `02:ee:00:00:0${s + 1}:0${p}`);
    for (const [s, mac] of switches.entries()) {
      const made = await server.request('POST', `/device/${mac}`, {
        body: { createNew: true, devName: `Switch ${s + 1}` },
      });
      assert.equal(made.status, 200, made.text);
      for (const port of ports(s)) {
        const res = await server.request('POST', `/device/${port}`, {
          body: { createNew: true, devName: `Port ${port.slice(-1)} of switch ${s + 1}`, devParentMAC: mac },
        });
        assert.equal(res.status, 200, res.text);
      }
    }
    await page.reload();
    await page.getByRole('button', { name: 'Expand Switch 2 (3)' }).click();
    for (const port of ports(1)) await node(port).waitFor();
    const placed = new Map(
      await page
        .locator('[data-node]')
        .evaluateAll((nodes) =>
          nodes.map(
            (n) =>
              [
                n.getAttribute('data-node') ?? '',
                { left: (n as HTMLElement).offsetLeft, top: (n as HTMLElement).offsetTop },
              ] as const,
          ),
        ),
    );
    const parentTop = placed.get(switches[1] ?? '')?.top ?? NaN;
    for (const port of ports(1)) {
      const top = placed.get(port)?.top ?? NaN;
      assert.ok(top >= parentTop, `${port} (top ${top}) is above its parent (top ${parentTop})`);
    }
    const spots = [...placed.values()].map((p) => `${p.left},${p.top}`);
    assert.equal(new Set(spots).size, spots.length, 'every node has a spot of its own');
  });
});

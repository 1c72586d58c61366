/**
 * The web console in a real browser (Debian's chromium through playwright-core) against the real
 * server on loopback: sign-in, the device list with search and filters, editing a device, deep
 * links, Wake-on-LAN (a UDP listener here receives the magic packet) and nmap of 127.0.0.1 from the
 * device page, a cross-origin write with the session cookie refused, and a page refused a stream
 * (MAX_STREAMS) going live once one is free.
 */
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { chromiumSkipReason, launchChromium } from '../helpers/browser.js';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { TestServer } from '../helpers/server.js';

const skip = chromiumSkipReason();
if (skip) console.log(`# console browser tests skipped: ${skip}`);

const target = '02:cc:00:00:00:07';

describe('web console in Chromium', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let udp: Socket;
  const packets: Buffer[] = [];
  /** Whether this build streams (GET /stream and the tools' text/event-stream answers exist). */
  let liveBuild = false;

  before(async () => {
    udp = createSocket('udp4');
    udp.on('message', (message) => packets.push(message));
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
    server = await TestServer.start({
      env: { WOL_BROADCAST: '127.0.0.1', WOL_PORT: String(udp.address().port) },
    });
    for (let i = 0; i < 30; i++) {
      const mac = `02:cc:00:00:00:${i.toString(16).padStart(2, '0')}`;
      const fields =
        mac === target
          ? {
              devName: 'Lab server',
              devOwner: 'Ops',
              devVendor: 'Acme',
              devLastIP: '127.0.0.1',
              devFavorite: 1,
            }
          : { devName: `device ${i}`, devOwner: i % 2 ? 'Alice' : 'Bob', devLastIP: `10.9.0.${i + 1}` };
      const res = await server.request('POST', `/device/${mac}`, { body: { createNew: true, ...fields } });
      assert.equal(res.status, 200, res.text);
    }
    const openapi = await server.request('GET', '/openapi.json');
    liveBuild = '/stream' in (openapi.json.paths as Record<string, unknown>);
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    page = await context.newPage();
  });
  after(async () => {
    await browser.close();
    await server.stop();
    udp.close();
  });

  const rows = () => page.locator('table.devices tbody tr');

  test('a wrong token says so and shows no data; the right one opens the device list', async () => {
    await page.goto(`${server.url}/`);
    await page.getByLabel('API token').fill('not-the-token');
    await page.keyboard.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'The token is not correct.' }).waitFor();
    assert.equal(await page.locator('table').count(), 0, 'no data behind a wrong token');
    assert.equal(new URL(page.url()).pathname, '/ui/');

    await page.getByLabel('API token').fill(server.token);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Devices' }).waitFor();
    await rows().first().waitFor();
    // The token is in no page storage; the session cookie is HttpOnly.
    const stored = await page.evaluate(() =>
      JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage), document.cookie]),
    );
    assert.ok(!stored.includes(server.token));
    const cookies = await context.cookies();
    assert.equal(cookies.find((c) => c.name === 'netkeep_session')?.httpOnly, true);
  });

  test('the list shows the seeded devices with counters; search and filters narrow it', async () => {
    await page.getByRole('button', { name: /^30\s*Devices$/ }).waitFor();
    assert.equal(await rows().count(), 30);
    await page.getByLabel('Search').fill('lab serv');
    await page.waitForFunction(() => document.querySelectorAll('table.devices tbody tr').length === 1);
    assert.equal(await rows().first().locator('a').textContent(), 'Lab server');
    assert.match(page.url(), /q=lab\+serv|q=lab%20serv/, 'the search is in the URL');

    await page.getByLabel('Search').fill('');
    await page.waitForFunction(() => document.querySelectorAll('table.devices tbody tr').length === 30);
    await page.getByRole('button', { name: /Favorites/ }).click();
    await page.waitForFunction(() => document.querySelectorAll('table.devices tbody tr').length === 1);
    await page.getByLabel('Show').selectOption('all');
    await page.waitForFunction(() => document.querySelectorAll('table.devices tbody tr').length === 30);
    await page.getByLabel('Search').fill('alice');
    await page.waitForFunction(() => document.querySelectorAll('table.devices tbody tr').length === 14);
    // The list is sorted by name already: one click on its header turns the order around.
    assert.equal(await page.locator('th', { hasText: 'Name' }).getAttribute('aria-sort'), 'ascending');
    await page.getByRole('button', { name: /^Name/ }).click();
    await page.waitForFunction(() => new URL(location.href).searchParams.get('order') === 'desc');
    // Natural order: "device 29" is the last name, not "device 9".
    await page.waitForFunction(
      () => document.querySelector('table.devices tbody tr a')?.textContent === 'device 29',
    );
  });

  test('open a device, edit, Save: the API shows the change; a reload keeps the page', async () => {
    await page.getByLabel('Search').fill('lab');
    // Keyboard only: focus the link and press Enter.
    await page.getByRole('link', { name: 'Lab server' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Lab server' }).waitFor();
    assert.equal(new URL(page.url()).pathname, `/ui/devices/${target}`);
    await page.getByLabel('Owner', { exact: true }).fill('Network team');
    await page.getByLabel('Comments').fill('Rack 2, top shelf');
    await page.getByLabel('Alert when down').check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    const device = await server.request('GET', `/device/${target}`);
    assert.equal(device.json.devOwner, 'Network team');
    assert.equal(device.json.devComments, 'Rack 2, top shelf');
    assert.equal(device.json.devAlertDown, 1);
    assert.equal(device.json.devName, 'Lab server', 'unchanged fields are left alone');

    await page.reload();
    await page.getByRole('heading', { name: 'Lab server' }).waitFor();
    assert.equal(await page.getByLabel('Owner', { exact: true }).inputValue(), 'Network team');
    await page.goto(`${server.url}/ui/events?type=New%20Device`);
    await page.getByRole('heading', { name: 'Events' }).waitFor();
    assert.equal(await page.getByRole('checkbox', { name: 'New Device' }).isChecked(), true);
  });

  test('presence: the Sleeping/Flapping filter, the badges and the IPv6 address; sleep settings editable', async () => {
    // What scan cycles leave (written by another connection, as the scanner's store would): one
    // device sleeping (devCanSleep, present, missed), one flapping, an IPv6 address.
    const sleeper = '02:cc:00:00:00:03';
    const flapper = '02:cc:00:00:00:04';
    const db = new Database(join(server.dataDir, 'netkeep.db'));
    try {
      db.prepare(
        'UPDATE Devices SET devCanSleep = 1, devPresentLastScan = 1, devPrimaryIPv6 = ? WHERE devMac = ?',
      ).run('fd00:cc::3', sleeper);
      const state = db.prepare(
        'INSERT INTO ScanState (mac, misses, lastAbsence, flapping) VALUES (?, ?, NULL, ?)',
      );
      state.run(sleeper, 2, 0);
      state.run(flapper, 0, 1);
    } finally {
      db.close();
    }
    await page.goto(`${server.url}/ui/?status=all`);
    await page.getByLabel('Presence').selectOption('sleeping');
    await page.waitForFunction(() => document.querySelectorAll('table.devices tbody tr').length === 1);
    assert.equal(await rows().first().locator('a').textContent(), 'device 3');
    assert.match((await rows().first().textContent()) ?? '', /sleeping/);
    assert.equal(new URL(page.url()).searchParams.get('presence'), 'sleeping');
    await page.getByLabel('Presence').selectOption('flapping');
    await page.waitForFunction(
      () => document.querySelector('table.devices tbody tr a')?.textContent === 'device 4',
    );
    assert.equal(await rows().count(), 1);

    await page.goto(`${server.url}/ui/devices/${sleeper}`);
    await page.getByRole('heading', { name: 'device 3' }).waitFor();
    await page.locator('.page-head .badge.sleeping', { hasText: 'Sleeping' }).waitFor();
    await page.locator('.summary', { hasText: 'fd00:cc::3' }).waitFor();
    assert.equal(await page.getByLabel(/^May sleep/).isChecked(), true);
    await page.getByLabel(/^Missed scans before absent/).fill('4');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    const device = await server.request('GET', `/device/${sleeper}`);
    assert.deepEqual(
      [device.json.devMissesBeforeAbsent, device.json.devCanSleep, device.json.devSleeping],
      [4, 1, 1],
    );
    await page.goto(`${server.url}/ui/devices/${flapper}`);
    await page.locator('.page-head .badge.flapping', { hasText: 'Flapping' }).waitFor();
  });

  test('Wake-on-LAN from the device page sends the magic packet', async () => {
    await page.goto(`${server.url}/ui/devices/${target}`);
    await page.getByRole('button', { name: 'Wake-on-LAN' }).click();
    await page.getByText(/WOL packet sent/).waitFor();
    const magic = Buffer.concat([
      Buffer.alloc(6, 0xff),
      ...Array.from({ length: 16 }, () => Buffer.from(target.split(':').map((h) => parseInt(h, 16)))),
    ]);
    for (let i = 0; i < 50 && packets.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(packets.length > 0, 'a packet arrived');
    assert.ok(
      packets.every((p) => p.equals(magic)),
      'each is the 102-byte magic packet of the MAC',
    );
  });

  test('the device page shows where the name came from; Resolve name asks the sources and keeps a user name', async () => {
    await page.goto(`${server.url}/ui/devices/${target}`);
    await page.getByText('name given by a person').waitFor();
    await page.getByRole('button', { name: 'Resolve name' }).click();
    await page.getByText('Name: Lab server (given by a person). No source answered.').waitFor();
    assert.equal((await server.request('GET', `/device/${target}`)).json.devNameSource, 'user');
  });

  test('nmap of 127.0.0.1 from the device page shows its output while running and at the end', async () => {
    await page.goto(`${server.url}/ui/devices/${target}`);
    // Not pre-filled: the device's address is the placeholder until the click on "Scan ports".
    assert.equal(await page.getByLabel('Port scan target').inputValue(), '');
    assert.equal(await page.getByLabel('Port scan target').getAttribute('placeholder'), '127.0.0.1');
    await page.getByLabel('Mode').selectOption('fast');
    const answered = page.waitForResponse((r) => r.url().endsWith('/nettools/nmap'));
    await page.getByRole('button', { name: 'Scan ports' }).click();
    await page.getByRole('status').filter({ hasText: 'Scanning…' }).waitFor();
    const response = await answered;
    await page.getByText('Port scan finished.').waitFor({ timeout: 120_000 });
    assert.equal(await page.getByLabel('Port scan target').inputValue(), '127.0.0.1', 'what was scanned');
    const output = page.getByLabel('Port scan output');
    assert.match((await output.textContent()) ?? '', /Nmap scan report for (localhost|127\.0\.0\.1)/);
    const reports = ((await output.textContent()) ?? '').match(/Nmap done/g) ?? [];
    assert.equal(reports.length, 1, 'the output is shown once, not the live lines and then the result again');
    if (liveBuild) {
      // Streamed: the lines arrived as progress messages while nmap ran.
      assert.match((await response.allHeaders())['content-type'] ?? '', /^text\/event-stream/);
      assert.equal(await output.getAttribute('data-live'), 'true');
    }
  });

  test('traceroute of 127.0.0.1 on the tools page shows its hops', async () => {
    await page.goto(`${server.url}/ui/tools`);
    await page.locator('#trace-ip').fill('127.0.0.1');
    await page.getByRole('button', { name: 'Trace' }).click();
    const output = page.getByLabel('Traceroute output');
    await output.waitFor({ timeout: 60_000 });
    await page
      .getByRole('button', { name: 'Trace' })
      .and(page.locator(':enabled'))
      .waitFor({ timeout: 60_000 });
    assert.match((await output.textContent()) ?? '', /traceroute to 127\.0\.0\.1/);
    if (liveBuild) assert.equal(await output.getAttribute('data-live'), 'true');
  });

  test('the device list follows changes live from GET /stream', async (t) => {
    if (!liveBuild) {
      t.diagnostic('this build has no GET /stream: the list is not live, nothing to check');
      return;
    }
    await page.goto(`${server.url}/ui/?status=all`);
    await page.getByRole('button', { name: /^30\s*Devices$/ }).waitFor();
    const res = await server.request('POST', '/device/02:cc:00:00:01:00', {
      body: { createNew: true, devName: 'arrived live' },
    });
    assert.equal(res.status, 200);
    await page.getByRole('button', { name: /^31\s*Devices$/ }).waitFor({ timeout: 15_000 });
    await page.getByRole('link', { name: 'arrived live' }).waitFor();
  });

  test('an import of many devices reaches the live list as one `devices-changed` message', async (t) => {
    if (!liveBuild) {
      t.diagnostic('this build has no GET /stream: the list is not live, nothing to check');
      return;
    }
    const before = Number((await server.request('GET', '/devices')).json.total);
    await page.goto(`${server.url}/ui/?status=all`);
    await page.getByRole('button', { name: new RegExp(`^${before}\\s*Devices$`) }).waitFor();
    const rows = Array.from(
      { length: 50 },
      (_, i) => `"02:cd:00:00:00:${i.toString(16).padStart(2, '0')}"\r\n`,
    );
    const content = Buffer.from(`"devMac"\r\n${rows.join('')}`).toString('base64');
    const res = await server.request('POST', '/devices/import', { body: { content } });
    assert.equal(res.status, 200, res.text);
    await page
      .getByRole('button', { name: new RegExp(`^${before + 50}\\s*Devices$`) })
      .waitFor({ timeout: 15_000 });
  });

  test('the console’s own GET of a tool passes the Origin rule (Sec-Fetch-Site: same-origin)', async () => {
    await page.goto(`${server.url}/ui/tools`);
    const answered = page.waitForResponse((r) => r.url().endsWith('/nettools/internetinfo'));
    await page.getByRole('region', { name: 'Internet info' }).getByRole('button', { name: 'Ask' }).click();
    const response = await answered;
    // The stand-in address (127.0.0.1:9) answers nothing: the tool ran and failed, not a 403.
    const body = (await response.json()) as { code?: string };
    assert.equal(response.status(), 500, JSON.stringify(body));
    assert.equal(body.code, 'INTERNETINFO_FAILED');
  });

  test('a cross-origin write carrying the session cookie is refused (403 by the Origin rule)', async () => {
    // A page on another loopback port is same-site (ports do not split sites), so the browser does
    // send the SameSite=Strict cookie: only the Origin check stands between it and a write.
    const attacker: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><form method="POST" enctype="text/plain"
        action=${JSON.stringify(`${server.url}/device/${target}`)}>
        <input name='{"devName":"pwned","x":"' value='"}'></form>
        <script>document.forms[0].submit();</script>`);
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    try {
      const address = attacker.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const answered = page.waitForResponse(
        (r) => r.url() === `${server.url}/device/${target}` && r.request().method() === 'POST',
      );
      await page.goto(`http://127.0.0.1:${port}/`);
      const response = await answered;
      assert.equal(response.status(), 403);
      assert.equal(response.request().headers().origin, `http://127.0.0.1:${port}`);
      // The page now shows the answer: the Origin rule refused it, so the cookie was sent (without
      // the cookie the answer would be the plain "ERROR: Not authorized").
      await page.waitForURL(`${server.url}/device/${target}`);
      assert.match((await page.textContent('body')) ?? '', /own pages \(Origin\)/);
      assert.equal((await server.request('GET', `/device/${target}`)).json.devName, 'Lab server');
    } finally {
      attacker.close();
    }
  });

  test('a random MAC has its badge; Merge with… moves a device in, Split off makes it one again', async () => {
    const keep = '02:cc:00:00:00:04';
    const other = '02:cc:00:00:00:05';
    await page.goto(`${server.url}/ui/devices/${keep}`);
    await page.getByRole('heading', { name: 'device 4' }).waitFor();
    assert.equal(await page.locator('.summary .tag.random').textContent(), 'random MAC');
    await page.getByLabel('Merge with…').fill(other);
    await page.getByRole('button', { name: 'Merge into this device' }).click();
    await page.getByText(`Merged: this device now has the MACs ${keep}, ${other}.`).waitFor();
    assert.deepEqual((await server.request('GET', `/device/${other}`)).json.devMacs, [keep, other]);
    await page.getByText(`also ${other}`).waitFor();
    // Every MAC is marked: the alias (locally administered, 02:…) has its own badge.
    assert.equal(await page.locator('.summary .alias .tag.random').textContent(), 'random MAC');
    await page.getByRole('button', { name: `Split off ${other}…` }).click();
    await page.getByRole('button', { name: 'Yes, split' }).click();
    await page.getByText(`${other} is a device of its own again.`).waitFor();
    assert.deepEqual((await server.request('GET', `/device/${other}`)).json.devMacs, [other]);
  });

  test('delete asks first: Cancel keeps the device, "Yes, delete" removes it and returns to the list', async () => {
    const doomed = '02:cc:00:00:00:03';
    await page.goto(`${server.url}/ui/devices/${doomed}`);
    await page.getByRole('button', { name: 'Delete device…' }).click();
    await page.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await server.request('GET', `/device/${doomed}`)).status, 200);
    await page.getByRole('button', { name: 'Delete device…' }).click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await page.waitForURL(`${server.url}/ui/`);
    assert.equal((await server.request('GET', `/device/${doomed}`)).status, 404);
  });

  test('sign-out ends the session: the next page asks for the token', async () => {
    await page.goto(`${server.url}/ui/tools`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API token').waitFor();
    await page.reload();
    await page.getByLabel('API token').waitFor();
    const res = await page.evaluate(async () => (await fetch('/devices')).status);
    assert.equal(res, 403);
  });

  test('a refusal answered after the sign-in, of a request sent before it, does not sign the page out', async () => {
    // The page's first request for the totals is held and answered only once the sign-in is
    // through, with the refusal the server gave it (a slow answer on a loaded server).
    let held: (() => Promise<void>) | undefined;
    await page.route('**/devices/totals', async (route) => {
      if (held !== undefined) return route.continue();
      const refused = await route.fetch();
      held = () => route.fulfill({ response: refused });
    });
    await page.goto(`${server.url}/ui/`);
    await page.getByLabel('API token').fill(server.token);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Devices' }).waitFor();
    assert.ok(held !== undefined, 'the first request for the totals was held');
    await held();
    await page.unroute('**/devices/totals');
    // The page takes a local answer in within milliseconds; a late refusal that signed it out
    // would have brought the sign-in form back well within this.
    await page.waitForTimeout(500);
    assert.equal(await page.getByLabel('API token').count(), 0, 'still signed in');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API token').waitFor();
  });
});

describe(
  'web console in Chromium: a page refused a stream (MAX_STREAMS) goes live once one is free',
  { skip },
  () => {
    let server: TestServer;
    let browser: Browser;

    before(async () => {
      server = await TestServer.start({ env: { MAX_STREAMS: '1', MAX_CONNECTIONS: '16' } });
      browser = await launchChromium();
    });
    after(async () => {
      await browser.close();
      await server.stop();
    });

    test('the list follows changes after the stream it was refused becomes free', async () => {
      const openapi = await server.request('GET', '/openapi.json');
      if (!('/stream' in (openapi.json.paths as Record<string, unknown>))) return;
      // Another client holds the only stream.
      const holder = connect(server.port, '127.0.0.1');
      holder.on('error', () => undefined);
      await new Promise((resolve) => holder.once('connect', resolve));
      holder.write(
        `GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.token}\r\nAccept: text/event-stream\r\n\r\n`,
      );
      await new Promise((resolve) => holder.once('data', resolve));
      try {
        const context = await browser.newContext();
        const page = await context.newPage();
        const refused = page.waitForResponse((r) => r.url().endsWith('/stream') && r.status() === 503);
        await page.goto(`${server.url}/ui/?status=all`);
        await page.getByLabel('API token').fill(server.token);
        await page.keyboard.press('Enter');
        await page.getByRole('button', { name: /^0\s*Devices$/ }).waitFor();
        await refused;
        holder.destroy();
        const created = await server.request('POST', '/device/02:cf:00:00:00:01', {
          body: { createNew: true, devName: 'after the refusal' },
        });
        assert.equal(created.status, 200);
        // The page asks for a stream again (every 10 s) and reloads once it has one.
        await page.getByRole('link', { name: 'after the refusal' }).waitFor({ timeout: 30_000 });
        await context.close();
      } finally {
        holder.destroy();
      }
    });
  },
);

/**
 * Settings (GET /settings and /ui/settings) and the backup button, in Debian's Chromium against the
 * real server: every variable of the config table is listed with where it came from, and no
 * secret's value ever reaches the API's answer or the page; a backup downloaded from the page
 * restores (npm run restore) to the same devices.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { Browser, Page } from 'playwright-core';
import { describeSettings, loadConfig, variables } from '../../src/config.js';
import { chromiumSkipReason, launchChromium } from '../helpers/browser.js';
import { TestServer } from '../helpers/server.js';

const secrets = {
  NOTIFY_WEBHOOK_SECRET: 'whsec-Secret-4f1c9a',
  NOTIFY_NTFY_TOKEN: 'tk_ntfy_Secret_77ab',
  MQTT_URL: 'mqtt://watcher:mqtt-Secret-pass-91@127.0.0.1:9',
  NOTIFY_WEBHOOK_URL: 'http://127.0.0.1:9/hooks/path-Secret-5521?sig=query-Secret-8',
};
/** Every part of a secret that must never be shown (the MQTT user name may be). */
const secretParts = (token: string) => [
  token,
  secrets.NOTIFY_WEBHOOK_SECRET,
  secrets.NOTIFY_NTFY_TOKEN,
  'mqtt-Secret-pass-91',
  'path-Secret-5521',
  'query-Secret-8',
];

test('describeSettings: every variable, its source (environment, .env, default), secrets hidden', () => {
  const cwd = mkdtempSync(join(tmpdir(), 'netkeep-settings-'));
  try {
    writeFileSync(join(cwd, '.env'), 'SCAN_INTERVAL=60\nNOTIFY_NTFY_TOKEN=file-Secret-1\n');
    const config = loadConfig({ PORT: '8080', API_TOKEN: 'env-Secret-2' }, cwd);
    const settings = describeSettings(config);
    assert.deepEqual(
      settings.map((s) => s.name),
      Object.keys(variables),
    );
    const byName = new Map(settings.map((s) => [s.name, s]));
    assert.deepEqual([byName.get('PORT')?.value, byName.get('PORT')?.source], ['8080', 'environment']);
    assert.deepEqual(
      [byName.get('SCAN_INTERVAL')?.value, byName.get('SCAN_INTERVAL')?.source],
      ['60', '.env'],
    );
    assert.deepEqual([byName.get('HOST')?.value, byName.get('HOST')?.source], ['0.0.0.0', 'default']);
    assert.equal(byName.get('NOTIFY_NTFY_TOKEN')?.value, '••••');
    assert.equal(byName.get('API_TOKEN')?.value, '••••');
    assert.ok(settings.every((s) => String(s.restartRequired) === 'true'));
    const text = JSON.stringify(settings);
    assert.ok(!text.includes('file-Secret-1') && !text.includes('env-Secret-2'));
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

const skip = chromiumSkipReason();

describe('settings and backup in Chromium', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const scratch = mkdtempSync(join(tmpdir(), 'netkeep-settings-page-'));

  before(async () => {
    server = await TestServer.start({ env: secrets });
    for (let i = 0; i < 5; i++) {
      const res = await server.request('POST', `/device/02:dd:00:00:00:0${i}`, {
        body: { createNew: true, devName: `saved ${i}` },
      });
      assert.equal(res.status, 200, res.text);
    }
    browser = await launchChromium();
    page = await (await browser.newContext({ acceptDownloads: true })).newPage();
    await page.goto(`${server.url}/ui/settings`);
    await page.getByLabel('API token').fill(server.token);
    await page.keyboard.press('Enter');
  });
  after(async () => {
    await browser.close();
    await server.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  test('GET /settings never carries a secret', async () => {
    const res = await server.request('GET', '/settings');
    assert.equal(res.status, 200);
    for (const part of secretParts(server.token)) assert.ok(!res.text.includes(part), part);
    const byName = new Map(
      (res.json.settings as { name: string; value: string; source: string }[]).map((s) => [s.name, s]),
    );
    assert.equal(byName.get('MQTT_URL')?.value, 'mqtt://watcher:••••@127.0.0.1:9');
    assert.equal(byName.get('NOTIFY_WEBHOOK_URL')?.value, 'http://127.0.0.1:9/••••?••••');
    assert.equal(byName.get('NOTIFY_WEBHOOK_SECRET')?.source, 'environment');
  });

  test('the page lists the settings by group, searchable, without a secret in its HTML', async () => {
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
    const mqtt = page.locator('.setting[data-name="MQTT_URL"]');
    await mqtt.waitFor();
    assert.match((await mqtt.textContent()) ?? '', /mqtt:\/\/watcher:••••@127\.0\.0\.1:9/);
    assert.equal(await page.locator('.setting').count(), Object.keys(variables).length);
    assert.ok(await page.getByRole('region', { name: 'Notifications' }).isVisible());
    const html = await page.content();
    for (const part of secretParts(server.token)) assert.ok(!html.includes(part), part);

    await page.getByLabel('Search settings').fill('traceroute_');
    await page.waitForFunction(() => document.querySelectorAll('.setting').length === 2);
    assert.deepEqual(await page.locator('.setting code').allTextContents(), [
      'TRACEROUTE_TIMEOUT_MS',
      'TRACEROUTE_MAX_HOPS',
    ]);
  });

  test('a backup downloaded from the page restores to the same devices', async () => {
    const downloaded = page.waitForEvent('download');
    await page.getByRole('link', { name: 'Download backup' }).click();
    const download = await downloaded;
    assert.match(download.suggestedFilename(), /^netkeep-\d{8}-\d{6}\.db$/);
    const file = join(scratch, download.suggestedFilename());
    await download.saveAs(file);
    const dataDir = join(scratch, 'restored');
    mkdirSync(dataDir);
    const script = fileURLToPath(new URL('../../../scripts/restore.mjs', import.meta.url));
    const run = spawnSync(process.execPath, [script, file], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', DATA_DIR: dataDir },
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, / 5 devices, /);
    const db = new Database(join(dataDir, 'netkeep.db'), { readonly: true });
    try {
      assert.deepEqual(db.prepare('SELECT devName FROM Devices ORDER BY devMac').pluck().all(), [
        'saved 0',
        'saved 1',
        'saved 2',
        'saved 3',
        'saved 4',
      ]);
    } finally {
      db.close();
    }
  });
});

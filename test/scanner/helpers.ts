/** Shared bits of the scanner tests: temp databases, table dumps, replayed discovery output. */
import type { KnownDevice } from '../../src/scanner/state-machine.js';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database } from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import type { TestResponse, TestServer } from '../helpers/server.js';

export interface TempDb {
  readonly dir: string;
  readonly file: string;
  db: Database;
  reopen(): void;
  remove(): void;
}

export function tempDb(): TempDb {
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-scan-'));
  const file = join(dir, 'netkeep.db');
  const handle: TempDb = {
    dir,
    file,
    db: openDatabase(file),
    reopen() {
      handle.db.close();
      handle.db = openDatabase(file);
    },
    remove() {
      if (handle.db.open) handle.db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return handle;
}

/** Every row of every table the scanner writes, in a stable order. */
export function dumpTables(db: Database): Record<string, unknown[]> {
  return {
    Devices: db.prepare('SELECT * FROM Devices ORDER BY devMac').all(),
    Events: db.prepare('SELECT rowid, * FROM Events ORDER BY rowid').all(),
    Sessions: db.prepare('SELECT rowid, * FROM Sessions ORDER BY rowid').all(),
    ScanState: db.prepare('SELECT * FROM ScanState ORDER BY mac').all(),
  };
}

/** Output captured from the real tools (see test/fixtures/scanner/README.md). */
export function fixture(name: string): string {
  return readFileSync(new URL(`../../../test/fixtures/scanner/${name}`, import.meta.url), 'utf8');
}

/**
 * Polls GET /nettools/scan until no cycle runs and one has finished that did not start at `after`
 * (the startedAt of a cycle seen before); that cycle (lastCycle).
 */
export async function settledCycle(
  app: { request(method: string, path: string): Promise<TestResponse> },
  after?: string,
): Promise<Record<string, unknown>> {
  for (let attempt = 0; attempt < 1200; attempt++) {
    const res = await app.request('GET', '/nettools/scan');
    const last = res.json.lastCycle as Record<string, unknown> | null;
    if (res.json.running === false && last !== null && last.startedAt !== after) return last;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return assert.fail('no scan cycle finished');
}

/** GET /nettools/scan until the first cycle has finished; bounded, failing with the server's log. */
export async function waitForFirstCycle(server: TestServer): Promise<Record<string, unknown>> {
  // Bounded so that a scanner that never finishes fails the test instead of hanging the suite.
  for (let attempt = 0; attempt < 1200; attempt++) {
    const res = await server.request('GET', '/nettools/scan');
    assert.equal(res.status, 200);
    if (res.json.running === false && res.json.lastCycle !== null) return res.json;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`the first scan cycle did not finish; server log:\n${server.logs.slice(-20).join('\n')}`);
}

/** A device the state machine knows: present, watched, alerting on events, no history of note. */
export function knownDevice(device: Pick<KnownDevice, 'mac' | 'lastIP'> & Partial<KnownDevice>): KnownDevice {
  return {
    presentLastScan: true,
    alertDown: false,
    alertEvents: true,
    scan: true,
    archived: false,
    vendor: '',
    misses: 0,
    lastAbsence: null,
    primaryIPv6: '',
    canSleep: false,
    lastConnection: null,
    missesBeforeAbsent: 0,
    flapping: false,
    recentToggles: 0,
    ...device,
  };
}

/**
 * The SQLite change log (migration "The change log"): another process's writes are named device by
 * device, a device whose only change was devLastConnection comes with its new value, and a reader
 * told nothing it can trust (the log pruned past it) is told that everything changed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Database } from 'better-sqlite3';
import { CommitProbe } from '../../../src/db/commit-probe.js';
import { openDatabase } from '../../../src/db/connection.js';
import type { Observation } from '../../../src/scanner/discovery.js';
import { planCycle } from '../../../src/scanner/state-machine.js';
import type { ChangeReader } from '../../../src/store/devices.js';
import { BulkCounts } from '../../../src/store/sqlite/import/bulk-counts.js';
import { SqliteDevices } from '../../../src/store/sqlite/devices.js';
import { ScanStore } from '../../helpers/scan-store.js';

const macOf = (i: number): string => `02:00:00:00:0e:${i.toString(16).padStart(2, '0')}`;
const seenAt = (ip: string): Observation => ({ ips: [ip], vendor: '', source: 'arp-scan' });

describe('the SQLite change log', () => {
  let dir: string;
  let db: Database;
  let other: Database;
  let repo: SqliteDevices;
  let reader: ChangeReader;
  /** The devices named by a poll, sorted; fails on "everything". */
  const named = (): string[] => {
    const changes = reader.poll();
    assert.notEqual(changes, 'all');
    return changes === 'all' ? [] : [...changes].sort();
  };
  /** What the last poll said was only a new devLastConnection, sorted. */
  const seen = (): [string, string][] => {
    const last = reader.lastSeen?.();
    assert.ok(last !== undefined, 'the SQLite reader tells');
    return [...last].sort();
  };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'netkeep-change-log-'));
    const file = join(dir, 'netkeep.db');
    db = openDatabase(file);
    other = openDatabase(file);
    repo = new SqliteDevices(db);
    reader = repo.changeReader();
  });
  after(() => {
    other.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the update triggers compare every Devices column but devLastConnection', () => {
    const columns = db
      .prepare<[], { name: string }>('PRAGMA table_info(Devices)')
      .all()
      .map((c) => c.name);
    // A change (anything but devLastConnection moved) and a device seen again (only it moved).
    for (const trigger of ['netkeep_changes_devices_update', 'netkeep_changes_devices_seen']) {
      const sql =
        db
          .prepare<[string], string>("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?")
          .pluck()
          .get(trigger) ?? '';
      for (const column of columns) {
        const compared = sql.split(`OLD.${column} IS NEW.${column}`).length - 1;
        assert.equal(compared, column === 'devLastConnection' ? 0 : 1, `${column} in ${trigger}: ${sql}`);
      }
      assert.match(sql, /OLD\.devLastConnection IS NOT NEW\.devLastConnection/);
    }
  });

  test('a renamed device and the parents of a changed child are named, from another process too', () => {
    other
      .prepare(
        "INSERT INTO Devices (devMac, devName, devParentMAC) VALUES (?, 'parent', ''), (?, 'other parent', ''), (?, 'child', ?)",
      )
      .run(macOf(0x41), macOf(0x42), macOf(0x43), macOf(0x41));
    named();
    // The child's name shows on its parent's answer.
    other.prepare("UPDATE Devices SET devName = 'renamed child' WHERE devMac = ?").run(macOf(0x43));
    assert.deepEqual(named(), [macOf(0x41), macOf(0x43)]);
    // A comment does not show on the parent.
    other.prepare("UPDATE Devices SET devComments = 'note' WHERE devMac = ?").run(macOf(0x43));
    assert.deepEqual(named(), [macOf(0x43)]);
    // Moved to another parent: both parents.
    other.prepare('UPDATE Devices SET devParentMAC = ? WHERE devMac = ?').run(macOf(0x42), macOf(0x43));
    assert.deepEqual(named(), [0x41, 0x42, 0x43].map(macOf));
    // A new MAC: the old one and the new one, and the parent (it shows the child's MAC).
    other.prepare('UPDATE Devices SET devMac = ? WHERE devMac = ?').run(macOf(0x44), macOf(0x43));
    assert.deepEqual(named(), [0x42, 0x43, 0x44].map(macOf));
    // Nothing changed at all: nobody.
    other.prepare('UPDATE Devices SET devName = devName WHERE devMac = ?').run(macOf(0x44));
    assert.deepEqual(reader.poll(), new Set());
    // The same on this connection (TEMP triggers).
    assert.ok(repo.update(macOf(0x44), { devName: 'child again' }));
    assert.deepEqual(named(), [macOf(0x42), macOf(0x44)]);
    assert.ok(repo.update(macOf(0x44), { devComments: 'again' }));
    assert.deepEqual(named(), [macOf(0x44)]);
    assert.ok(repo.update(macOf(0x44), { devParentMAC: macOf(0x41) }));
    assert.deepEqual(named(), [0x41, 0x42, 0x44].map(macOf));
  });

  test("another process's scan cycle is named device by device; devices seen again come with their new time", () => {
    const scanner = new ScanStore(new SqliteDevices(other));
    const first = new Map<string, Observation>();
    for (let i = 1; i <= 6; i++) first.set(macOf(i), seenAt(`10.0.0.${i}`));
    const apply = (observations: Map<string, Observation>, at: number): void => {
      scanner.apply(
        planCycle({ known: scanner.loadState(), observations, missesBeforeAbsent: 1, now: new Date(at) }),
      );
    };
    const start = Date.UTC(2024, 5, 15, 12, 0, 0);
    apply(first, start);
    assert.deepEqual(named(), [1, 2, 3, 4, 5, 6].map(macOf));
    assert.deepEqual(seen(), [], 'new devices are not merely seen again');
    // 1-3 and 6 seen again at the same address, 4 at a new address, 5 not seen (disconnects).
    const second = new Map<string, Observation>([
      [macOf(1), seenAt('10.0.0.1')],
      [macOf(2), seenAt('10.0.0.2')],
      [macOf(3), seenAt('10.0.0.3')],
      [macOf(4), seenAt('10.0.0.40')],
      [macOf(6), seenAt('10.0.0.6')],
    ]);
    apply(second, start + 60_000);
    assert.deepEqual(named(), [1, 2, 3, 4, 5, 6].map(macOf));
    assert.deepEqual(
      seen(),
      [1, 2, 3, 6].map((i) => [macOf(i), '2024-06-15T12:01:00Z']),
      'the new address of 4 and the disconnection of 5 are other changes',
    );
    assert.deepEqual(reader.poll(), new Set(), 'nothing more');
    // A device not touched is not named.
    other.prepare('UPDATE Devices SET devOwner = ? WHERE devMac = ?').run('me', macOf(2));
    assert.deepEqual(named(), [macOf(2)]);
    assert.deepEqual(seen(), []);
  });

  test('a scan cycle appends one log row per device it changed, and the log is never left held', () => {
    const scanner = new ScanStore(new SqliteDevices(other));
    const lastId = (): number =>
      other.prepare<[], number>('SELECT MAX(id) FROM netkeep_change_log').pluck().get() ?? 0;
    const held = (): number =>
      other.prepare<[], number>('SELECT COUNT(*) FROM netkeep_change_log_held').pluck().get() ?? 0;
    const macs = [0x30, 0x31, 0x32, 0x33].map(macOf);
    const apply = (observed: string[], at: number, testOnlyBeforeCommit?: () => void): void => {
      const observations = new Map(
        observed.map((mac, i) => [mac, seenAt(`10.0.1.${String(i + 1)}`)] as const),
      );
      scanner.apply(
        planCycle({ known: scanner.loadState(), observations, missesBeforeAbsent: 1, now: new Date(at) }),
        { testOnlyBeforeCommit },
      );
    };
    /** Applies a cycle; checks that it appended one row per device named, and names them. */
    const cycle = (observed: string[], at: number): string[] => {
      const before = lastId();
      apply(observed, at);
      const devices = named();
      assert.equal(lastId() - before, devices.length, 'one log row per device');
      return devices;
    };
    const start = Date.UTC(2024, 5, 17, 12, 0, 0);
    named();
    // New devices: a Devices row, an event, a session and the scanner's memory each (the devices
    // of the tests before, not observed, go absent).
    assert.deepEqual(
      cycle(macs, start).filter((mac) => macs.includes(mac)),
      macs,
    );
    // 0x30 and 0x31 seen again (their new time only), 0x32 and 0x33 gone (event, session, status).
    assert.deepEqual(cycle(macs.slice(0, 2), start + 60_000), macs);
    assert.deepEqual(
      seen(),
      macs.slice(0, 2).map((mac) => [mac, '2024-06-17T12:01:00Z']),
    );
    assert.equal(held(), 0);
    // A cycle that fails before its commit: nothing of it stays, the hold neither.
    const before = lastId();
    assert.throws(() => {
      apply(macs, start + 120_000, () => {
        throw new Error('disk full');
      });
    }, /disk full/);
    assert.equal(lastId(), before);
    assert.equal(held(), 0);
    // Every other writer is logged by the triggers, row by row, as before.
    other.prepare('UPDATE Devices SET devOwner = ? WHERE devMac = ?').run('them', macs[3]);
    assert.equal(lastId(), before + 1);
    assert.deepEqual(named(), [macs[3]]);
  });

  test('a reader the log was pruned past is told that everything changed', () => {
    other.prepare('UPDATE Devices SET devOwner = ? WHERE devMac = ?').run('again', macOf(3));
    // More rows than the log keeps, written by another process before this reader looks again.
    other.exec(`
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 140000)
      INSERT INTO netkeep_change_log (mac) SELECT '02:00:00:00:0f:01' FROM n`);
    const rows = other.prepare<[], number>('SELECT COUNT(*) FROM netkeep_change_log').pluck().get() ?? 0;
    assert.ok(rows <= 131_072 + 1024, `the log stays bounded (${rows} rows)`);
    assert.equal(reader.poll(), 'all');
    // And from there on, named again.
    other.prepare('UPDATE Devices SET devOwner = ? WHERE devMac = ?').run('later', macOf(1));
    assert.deepEqual(named(), [macOf(1)]);
  });

  test('of several rows of one device, a change wins over seen, and the last seen value counts', () => {
    const log = other.prepare('INSERT INTO netkeep_change_log (mac, seen) VALUES (?, ?)');
    other.transaction(() => {
      // 0f:01: seen, changed, seen again: read again. 0f:02: seen twice: the later value (not
      // the larger one). 0f:03: a 'seen' that is not text (a blob another program wrote): read
      // again.
      log.run('02:00:00:00:0f:01', '2024-06-15 14:00:00');
      log.run('02:00:00:00:0f:01', null);
      log.run('02:00:00:00:0f:01', '2024-06-15 15:00:00');
      log.run('02:00:00:00:0f:02', '2024-06-15 16:00:00');
      log.run('02:00:00:00:0f:02', '2024-06-15 15:30:00');
      log.run('02:00:00:00:0f:03', Buffer.from('2024-06-15 16:00:00'));
      log.run(null, null);
    })();
    assert.deepEqual(named(), ['02:00:00:00:0f:01', '02:00:00:00:0f:02', '02:00:00:00:0f:03']);
    assert.deepEqual(seen(), [['02:00:00:00:0f:02', '2024-06-15T15:30:00Z']]);
    // Many rows at once (a cycle's worth): every device, and nothing read twice.
    other.exec(`
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
      INSERT INTO netkeep_change_log (mac, seen) SELECT '02:00:00:00:0f:04', '2024-06-15 14:00:00' FROM n`);
    other.prepare('UPDATE Devices SET devOwner = ? WHERE devMac = ?').run('last', macOf(2));
    assert.deepEqual(named(), [macOf(2), '02:00:00:00:0f:04']);
    assert.deepEqual(seen(), [['02:00:00:00:0f:04', '2024-06-15T14:00:00Z']]);
    assert.deepEqual(reader.poll(), new Set());
  });

  test("this connection's own writes are named by its TEMP triggers and not read again from the log", () => {
    assert.ok(repo.update(macOf(4), { devOwner: 'here' }));
    assert.deepEqual(named(), [macOf(4)]);
    other
      .prepare("UPDATE Devices SET devLastConnection = '2024-06-15 13:00:00' WHERE devMac = ?")
      .run(macOf(4));
    assert.deepEqual(named(), [macOf(4)]);
    assert.deepEqual(seen(), [[macOf(4), '2024-06-15T13:00:00Z']]);
  });

  test("an import's history batch names its devices once each, with the log trigger back after it", () => {
    const bulk = new BulkCounts(other);
    const rowsBefore = other.prepare<[], number>('SELECT MAX(id) FROM netkeep_change_log').pluck().get() ?? 0;
    other.transaction(() => {
      bulk.insertCounted('Events', () => {
        const insert = other.prepare(
          "INSERT INTO Events (eve_MAC, eve_DateTime, eve_EventType) VALUES (?, '2024-06-01 10:00:00', 'Connected')",
        );
        for (let i = 0; i < 50; i++) insert.run(macOf(i % 2 === 0 ? 5 : 6));
      });
    })();
    assert.deepEqual(named(), [macOf(5), macOf(6)]);
    const rowsAfter = other.prepare<[], number>('SELECT MAX(id) FROM netkeep_change_log').pluck().get() ?? 0;
    assert.equal(rowsAfter - rowsBefore, 2, 'one row per device, not per event');
    other
      .prepare(
        "INSERT INTO Events (eve_MAC, eve_DateTime, eve_EventType) VALUES (?, '2024-06-01 11:00:00', 'Connected')",
      )
      .run(macOf(3));
    assert.deepEqual(named(), [macOf(3)]);
  });

  test("this connection's own scan cycle: devices seen again come with their new time too", () => {
    const scanner = new ScanStore(repo);
    const at = (ms: number): Map<string, Observation> =>
      new Map([1, 2].map((i) => [macOf(i), seenAt(`10.0.0.${String(i)}`)] as const)).set(
        macOf(3),
        seenAt(`10.0.3.${String(Math.floor(ms / 60_000) % 200)}`),
      );
    const apply = (ms: number): void => {
      scanner.apply(
        planCycle({
          known: scanner.loadState(),
          observations: at(ms),
          missesBeforeAbsent: 1,
          now: new Date(ms),
        }),
      );
    };
    const start = Date.UTC(2024, 5, 16, 12, 0, 0);
    apply(start);
    named();
    apply(start + 60_000);
    // 1 and 2 seen again at their address, 3 at a new one (4-6 were missed by both cycles).
    assert.deepEqual(named(), [1, 2, 3].map(macOf));
    assert.deepEqual(
      seen(),
      [1, 2].map((i) => [macOf(i), '2024-06-16T12:01:00Z']),
    );
    assert.ok(repo.update(macOf(1), { devOwner: 'changed' }));
    assert.deepEqual(named(), [macOf(1)]);
    assert.deepEqual(seen(), [], 'another column: read again');
  });
  test('a shared poll looks after it was asked, once for every caller waiting, and looks anew after', async () => {
    const second = repo.changeReader();
    for (const i of [7, 8, 9]) assert.equal(repo.create(macOf(i), {}, new Date()), 'created');
    named();
    second.poll();
    let looks = 0;
    let failNext = false;
    const probe = (CommitProbe.prototype as { mayHaveChanged: () => boolean }).mayHaveChanged;
    CommitProbe.prototype.mayHaveChanged = function (this: CommitProbe): boolean {
      looks++;
      if (failNext) {
        failNext = false;
        throw new Error('the look failed');
      }
      return probe.call(this);
    };
    const rename = other.prepare('UPDATE Devices SET devOwner = ? WHERE devMac = ?');
    try {
      const first = reader.pollShared().then((polled) => polled.changes);
      const both = second.pollShared().then((polled) => polled.changes);
      // Committed after both asked, before the look: both are told.
      rename.run('shared 1', macOf(7));
      assert.equal(looks, 0, 'no look until the turn ends');
      assert.deepEqual(await first, new Set([macOf(7)]));
      assert.deepEqual(await both, new Set([macOf(7)]));
      assert.equal(looks, 1, 'one look for both');
      rename.run('shared 2', macOf(8));
      assert.deepEqual((await reader.pollShared()).changes, new Set([macOf(8)]));
      assert.equal(looks, 2, 'a caller after the look waits for a look of its own');
      failNext = true;
      const failing = [reader.pollShared(), second.pollShared()];
      for (const waiter of failing) await assert.rejects(waiter, /the look failed/);
      rename.run('shared 3', macOf(9));
      assert.deepEqual(
        (await reader.pollShared()).changes,
        new Set([macOf(9)]),
        'the next caller looks again',
      );
    } finally {
      CommitProbe.prototype.mayHaveChanged = probe;
    }
  });
  test('the counts a request asks for come from a look made after it asked', async () => {
    const before = repo.counts().my;
    const asked = repo.countsShared();
    other.prepare("INSERT INTO Devices (devMac, devName) VALUES (?, 'counted')").run(macOf(0x60));
    assert.equal((await asked).my, before + 1);
    assert.equal(repo.totals().my, before + 1);
  });
});

/**
 * The inserts every benchmark seeder uses: a database file made by the real migrations, devices
 * built like the server builds them (newDeviceRow), and history rows. `fill` runs the caller's
 * loop in one transaction, without fsyncs, then checkpoints so that the WAL is empty for the run.
 */
import Database from 'better-sqlite3';
import { openDatabase } from '../src/db/connection.js';
import { migrations } from '../src/store/sqlite/migrations.js';
import { storedFields, type DbValue } from '../src/devices/catalogue.js';
import { newDeviceRow } from '../src/store/sqlite/rows.js';

export interface Seeder {
  /**
   * A device: catalogue defaults, then `columns`. Values are stored column values (times as
   * `dbTime` text, flags 0/1), and every key must be a stored field of the catalogue.
   */
  device(mac: string, columns: Readonly<Record<string, DbValue>>): void;
  event(mac: string, ip: string, dateTime: string, type: string): void;
  /** A session opened by Connected; `disconnectedAt` null keeps it open. */
  session(mac: string, ip: string, connectedAt: string, disconnectedAt: string | null): void;
}

const storedNames = new Set(storedFields.map((f) => f.name));

/**
 * The schema as it was before the history counts were kept by triggers: the seed is inserted into
 * it and the counts migration then counts what is there, as it does when an existing installation
 * upgrades (row by row, the triggers would make seeding a million events ten times slower).
 */
function openBeforeCounts(file: string): { db: Database.Database; version: number } {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  const counts = migrations.findIndex((m) => m.description.startsWith('Per-device history counts'));
  if (counts < 0) throw new Error('no counts migration');
  db.transaction(() => {
    for (const migration of migrations.slice(0, counts)) migration.up(db);
    db.pragma(`user_version = ${counts}`);
  })();
  return { db, version: counts };
}

export function seedDatabaseFile(file: string, fill: (seeder: Seeder) => void): void {
  const { db, version } = openBeforeCounts(file);
  // The columns that schema has: fields added by a later migration get their default from it.
  const columns = storedFields.filter((f) => f.since <= version).map((f) => f.name);
  const insertDevice = db.prepare<[Record<string, DbValue>]>(
    `INSERT INTO Devices (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`,
  );
  const later = new Set(storedFields.filter((f) => f.since > version).map((f) => f.name));
  const insertEvent = db.prepare<[string, string, string, string]>(
    'INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType) VALUES (?, ?, ?, ?)',
  );
  const insertSession = db.prepare<[string, string, string, string, string | null, number]>(
    `INSERT INTO Sessions (ses_MAC, ses_IP, ses_EventTypeConnection, ses_DateTimeConnection,
       ses_EventTypeDisconnection, ses_DateTimeDisconnection, ses_StillConnected)
     VALUES (?, ?, 'Connected', ?, ?, ?, ?)`,
  );
  const seeder: Seeder = {
    device: (mac, columns) => {
      const unknown = Object.keys(columns).filter((name) => !storedNames.has(name));
      if (unknown.length > 0) throw new Error(`not stored fields: ${unknown.join(', ')}`);
      const tooNew = Object.keys(columns).filter((name) => later.has(name));
      if (tooNew.length > 0)
        throw new Error(`set after seeding (added by a later migration): ${tooNew.join(', ')}`);
      const row = newDeviceRow(mac, columns);
      insertDevice.run(Object.fromEntries(Object.entries(row).filter(([name]) => !later.has(name))));
    },
    event: (mac, ip, dateTime, type) => insertEvent.run(mac, ip, dateTime, type),
    session: (mac, ip, connectedAt, disconnectedAt) =>
      insertSession.run(
        mac,
        ip,
        connectedAt,
        disconnectedAt === null ? '' : 'Disconnected',
        disconnectedAt,
        disconnectedAt === null ? 1 : 0,
      ),
  };
  try {
    db.transaction(() => {
      fill(seeder);
    })();
  } finally {
    db.close();
  }
  const migrated = openDatabase(file); // the remaining migrations, counts included
  migrated.pragma('wal_checkpoint(TRUNCATE)');
  migrated.close();
}

/**
 * Versioned schema migrations. `PRAGMA user_version` holds the number of migrations applied; each
 * one runs in its own transaction, so a crash mid-migration leaves the previous version intact.
 * Never edit a released migration: append a new one.
 */
import type { Database } from 'better-sqlite3';
import { devicesTableDdl } from '../devices/catalogue.js';

export interface Migration {
  readonly description: string;
  readonly up: (db: Database) => void;
}

export const migrations: readonly Migration[] = [
  {
    description: 'Devices, Events and Sessions with their per-device indexes',
    up(db) {
      db.exec(devicesTableDdl());
      db.exec(`
        CREATE INDEX Devices_parent ON Devices (devParentMAC);

        CREATE TABLE Events (
          eve_MAC TEXT NOT NULL,
          eve_IP TEXT NOT NULL DEFAULT '',
          eve_DateTime TEXT NOT NULL,
          eve_EventType TEXT NOT NULL,
          eve_AdditionalInfo TEXT NOT NULL DEFAULT '',
          eve_PendingAlertEmail INTEGER NOT NULL DEFAULT 0,
          eve_PairEventRowid INTEGER
        );
        -- Covers the per-device counts (by period and type) and the newest-first listing.
        CREATE INDEX Events_mac_time ON Events (eve_MAC, eve_DateTime, eve_EventType);
        -- Retention pruning by age.
        CREATE INDEX Events_time ON Events (eve_DateTime);

        CREATE TABLE Sessions (
          ses_MAC TEXT NOT NULL,
          ses_IP TEXT NOT NULL DEFAULT '',
          ses_EventTypeConnection TEXT NOT NULL DEFAULT '',
          ses_DateTimeConnection TEXT,
          ses_EventTypeDisconnection TEXT NOT NULL DEFAULT '',
          ses_DateTimeDisconnection TEXT,
          ses_StillConnected INTEGER NOT NULL DEFAULT 0,
          ses_AdditionalInfo TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX Sessions_mac_connection ON Sessions (ses_MAC, ses_DateTimeConnection);
        -- Finding a device's open session, and sessions that end after a period start.
        CREATE INDEX Sessions_mac_disconnection ON Sessions (ses_MAC, ses_DateTimeDisconnection);
        CREATE INDEX Sessions_disconnection ON Sessions (ses_DateTimeDisconnection);
      `);
    },
  },
  {
    // GET /device computes presence from every session of the device; with the columns in the
    // index that is one index range instead of a table-row lookup per session (30 -> 10 us per
    // device at 20 sessions each, see docs/benchmarks.md). It extends Sessions_mac_disconnection,
    // which therefore goes.
    description: 'Covering index for per-device session statistics',
    up(db) {
      db.exec(`
        CREATE INDEX Sessions_mac_stats
          ON Sessions (ses_MAC, ses_DateTimeDisconnection, ses_StillConnected, ses_DateTimeConnection);
        DROP INDEX Sessions_mac_disconnection;
      `);
    },
  },
];

/** Applies every migration newer than the database's user_version. Returns how many ran. */
export function migrate(db: Database): number {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > migrations.length) {
    throw new Error(`database schema version ${current} is newer than this netkeep (${migrations.length})`);
  }
  for (let version = current; version < migrations.length; version++) {
    const migration = migrations[version];
    if (!migration) break;
    db.transaction(() => {
      migration.up(db);
      db.pragma(`user_version = ${version + 1}`);
    })();
  }
  return migrations.length - current;
}

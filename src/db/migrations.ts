/**
 * Versioned schema migrations. `PRAGMA user_version` holds the number of migrations applied; each
 * one runs in its own transaction, so a crash mid-migration leaves the previous version intact.
 * Released migrations are frozen literal SQL: never edit one, and never generate one from code that
 * may change (the device catalogue); append a new migration instead.
 */
import type { Database } from 'better-sqlite3';

export interface Migration {
  readonly description: string;
  readonly up: (db: Database) => void;
}

export const migrations: readonly Migration[] = [
  {
    description: 'Devices, Events and Sessions with their per-device indexes',
    up(db) {
      db.exec(`
        CREATE TABLE Devices (
          devMac TEXT PRIMARY KEY NOT NULL,
          devName TEXT NOT NULL DEFAULT '',
          devOwner TEXT NOT NULL DEFAULT '',
          devType TEXT NOT NULL DEFAULT '',
          devVendor TEXT NOT NULL DEFAULT '',
          devFavorite INTEGER NOT NULL DEFAULT 0 CHECK (devFavorite IN (0, 1)),
          devGroup TEXT NOT NULL DEFAULT '',
          devComments TEXT NOT NULL DEFAULT '',
          devFirstConnection TEXT,
          devLastConnection TEXT,
          devLastIP TEXT NOT NULL DEFAULT '',
          devStaticIP INTEGER NOT NULL DEFAULT 0 CHECK (devStaticIP IN (0, 1)),
          devScan INTEGER NOT NULL DEFAULT 0 CHECK (devScan IN (0, 1)),
          devLogEvents INTEGER NOT NULL DEFAULT 0 CHECK (devLogEvents IN (0, 1)),
          devAlertEvents INTEGER NOT NULL DEFAULT 0 CHECK (devAlertEvents IN (0, 1)),
          devAlertDown INTEGER NOT NULL DEFAULT 0 CHECK (devAlertDown IN (0, 1)),
          devSkipRepeated INTEGER NOT NULL DEFAULT 0 CHECK (devSkipRepeated IN (0, 1)),
          devLastNotification TEXT,
          devPresentLastScan INTEGER NOT NULL DEFAULT 0 CHECK (devPresentLastScan IN (0, 1)),
          devIsNew INTEGER NOT NULL DEFAULT 0 CHECK (devIsNew IN (0, 1)),
          devLocation TEXT NOT NULL DEFAULT '',
          devIsArchived INTEGER NOT NULL DEFAULT 0 CHECK (devIsArchived IN (0, 1)),
          devParentMAC TEXT NOT NULL DEFAULT '',
          devParentPort INTEGER,
          devParentRelType TEXT NOT NULL DEFAULT '',
          devReqNicsOnline INTEGER NOT NULL DEFAULT 0 CHECK (devReqNicsOnline IN (0, 1)),
          devIcon TEXT NOT NULL DEFAULT '',
          devGUID TEXT NOT NULL DEFAULT '',
          devSite TEXT NOT NULL DEFAULT '',
          devSSID TEXT NOT NULL DEFAULT '',
          devSyncHubNode TEXT NOT NULL DEFAULT '',
          devSourcePlugin TEXT NOT NULL DEFAULT '',
          devCustomProps TEXT NOT NULL DEFAULT '[]',
          devFQDN TEXT NOT NULL DEFAULT ''
        ) STRICT;
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
        -- GET /device computes presence from the device's sessions that end after the period start
        -- (or are open); with every column it reads in the index, that is one index range and no
        -- table-row lookups (30 -> 10 us per device at 20 sessions, see docs/benchmarks.md).
        CREATE INDEX Sessions_mac_stats
          ON Sessions (ses_MAC, ses_DateTimeDisconnection, ses_StillConnected, ses_DateTimeConnection);
        CREATE INDEX Sessions_disconnection ON Sessions (ses_DateTimeDisconnection);
      `);
    },
  },
  {
    description:
      'ScanState: per-device presence-scan memory (consecutive misses, how the last absence was recorded) and an index of open sessions',
    up(db) {
      // Kept out of Devices: these are the scanner's own bookkeeping, not device fields, and they
      // must survive restarts so that the grace rule and Down Reconnected stay right.
      db.exec(`
        CREATE TABLE ScanState (
          mac TEXT PRIMARY KEY NOT NULL,
          misses INTEGER NOT NULL DEFAULT 0,
          lastAbsence TEXT CHECK (lastAbsence IN ('Disconnected', 'Device Down'))
        ) STRICT;
        -- A device's open session: closed by the scanner on every disconnect.
        CREATE INDEX Sessions_open ON Sessions (ses_MAC) WHERE ses_StillConnected = 1;
      `);
    },
  },
  {
    description:
      'Notifications: the alert outbox (one row per channel and scan cycle); devSkipRepeated becomes hours (0-8760)',
    up(db) {
      db.exec(`
        -- The events a cycle notified, stored once and shared by the rows of every channel.
        CREATE TABLE NotificationPayloads (
          id INTEGER PRIMARY KEY,
          -- JSON array of the event objects the deliveries carry.
          events TEXT NOT NULL
        ) STRICT;
        CREATE TABLE Notifications (
          id INTEGER PRIMARY KEY,
          deliveryId TEXT NOT NULL UNIQUE,
          channel TEXT NOT NULL CHECK (channel IN ('webhook', 'ntfy', 'apprise', 'mqtt')),
          status TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'failed', 'skipped')),
          attempts INTEGER NOT NULL DEFAULT 0,
          createdAt TEXT NOT NULL,
          -- Unix milliseconds; only pending rows have one.
          nextAttemptAt INTEGER,
          sentAt TEXT,
          lastError TEXT,
          payloadId INTEGER NOT NULL REFERENCES NotificationPayloads (id)
        ) STRICT;
        CREATE INDEX Notifications_due ON Notifications (channel, nextAttemptAt) WHERE status = 'pending';
        CREATE INDEX Notifications_status ON Notifications (status, id);
      `);
      // The Devices CHECK of devSkipRepeated was IN (0, 1). Only a constraint changes (every stored
      // value stays valid), so SQLite's documented in-place procedure applies: edit the table's
      // text in the schema and bump schema_version.
      db.unsafeMode(true);
      try {
        const version = db.pragma('schema_version', { simple: true }) as number;
        db.pragma('writable_schema = ON');
        db.exec(`
          UPDATE sqlite_schema
          SET sql = replace(sql, 'CHECK (devSkipRepeated IN (0, 1))', 'CHECK (devSkipRepeated BETWEEN 0 AND 8760)')
          WHERE type = 'table' AND name = 'Devices'
        `);
        db.pragma(`schema_version = ${version + 1}`);
        db.pragma('writable_schema = OFF');
      } finally {
        db.unsafeMode(false);
      }
    },
  },
  {
    description:
      'Console indexes: Events by type and time (event log counts by type), Devices by name (the device list sorted by name)',
    up(db) {
      db.exec(`
        CREATE INDEX Events_type_time ON Events (eve_EventType, eve_DateTime);
        CREATE INDEX Devices_name ON Devices (devName COLLATE NOCASE, devMac);
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

/**
 * Versioned schema migrations. `PRAGMA user_version` holds the number of migrations applied; each
 * one runs in its own transaction, so a crash mid-migration leaves the previous version intact.
 * Released migrations are frozen literal SQL: never edit one, and never generate one from code that
 * may change (the device catalogue); append a new migration instead.
 */
import type { Database } from 'better-sqlite3';
import { devicesColumnsV11 } from '../devices-columns-v11.js';

export interface Migration {
  readonly description: string;
  readonly up: (db: Database) => void;
}

/**
 * The counts migration's backfill: the count triggers' arithmetic over every row of Events and
 * Sessions, into empty DeviceHistoryTotals and DeviceHistoryBuckets. Part of that migration, so
 * frozen like it: never edit it. The importer runs it too (src/import/bulk-counts.ts), over the rows
 * of one batch, instead of letting the triggers count row by row.
 */
export const historyCountsBackfill = `
        INSERT INTO DeviceHistoryTotals (mac, events, downAlerts, sessions, closedSeconds, irregular)
          SELECT mac, SUM(events), SUM(downAlerts), SUM(sessions), SUM(closedSeconds), SUM(irregular) FROM (
            SELECT E.eve_MAC AS mac, 1 AS events, (E.eve_EventType = 'Device Down') AS downAlerts,
              0 AS sessions, 0 AS closedSeconds, (datetime(E.eve_DateTime) IS NOT E.eve_DateTime) AS irregular
            FROM Events AS E WHERE E.eve_EventType NOT IN ('Connected', 'Disconnected')
            UNION ALL
            SELECT S.ses_MAC, 0, 0, ((S.ses_DateTimeDisconnection IS NULL OR S.ses_StillConnected = 1) OR S.ses_DateTimeDisconnection > ''), CASE WHEN (S.ses_DateTimeDisconnection IS NULL OR S.ses_StillConnected = 1) OR NOT ((S.ses_DateTimeDisconnection IS NULL OR S.ses_StillConnected = 1) OR S.ses_DateTimeDisconnection > '') THEN 0
          ELSE COALESCE(MAX(0, unixepoch(S.ses_DateTimeDisconnection) - unixepoch(S.ses_DateTimeConnection)), 0) END, (NOT (S.ses_DateTimeDisconnection IS NULL OR S.ses_StillConnected = 1) AND NOT (NOT (S.ses_DateTimeDisconnection IS NULL OR S.ses_StillConnected = 1) AND S.ses_DateTimeConnection IS NOT NULL
          AND datetime(S.ses_DateTimeConnection) IS S.ses_DateTimeConnection
          AND datetime(S.ses_DateTimeDisconnection) IS S.ses_DateTimeDisconnection
          AND S.ses_DateTimeConnection <= S.ses_DateTimeDisconnection))
            FROM Sessions AS S)
          GROUP BY mac;
        INSERT INTO DeviceHistoryBuckets (mac, span, bucket, events, downAlerts, ended, endedSum, started, startedSum)
          SELECT mac, span, bucket, SUM(events), SUM(downAlerts), SUM(ended), SUM(endedSum), SUM(started), SUM(startedSum)
          FROM (
            SELECT E.eve_MAC AS mac, v.column1 AS span, substr(E.eve_DateTime, 1, v.column1) AS bucket,
              1 AS events, (E.eve_EventType = 'Device Down') AS downAlerts,
              0 AS ended, 0 AS endedSum, 0 AS started, 0 AS startedSum
            FROM Events AS E, (VALUES (10), (7)) AS v
            WHERE E.eve_EventType NOT IN ('Connected', 'Disconnected') AND datetime(E.eve_DateTime) IS E.eve_DateTime
            UNION ALL
            SELECT S.ses_MAC, v.column1,
              substr(CASE v.column2 WHEN 0 THEN S.ses_DateTimeDisconnection ELSE S.ses_DateTimeConnection END, 1, v.column1),
              0, 0, (v.column2 = 0), (v.column2 = 0) * unixepoch(S.ses_DateTimeDisconnection),
              (v.column2 = 1), (v.column2 = 1) * unixepoch(S.ses_DateTimeConnection)
            FROM Sessions AS S, (VALUES (10, 0), (7, 0), (10, 1), (7, 1)) AS v
            WHERE (NOT (S.ses_DateTimeDisconnection IS NULL OR S.ses_StillConnected = 1) AND S.ses_DateTimeConnection IS NOT NULL
          AND datetime(S.ses_DateTimeConnection) IS S.ses_DateTimeConnection
          AND datetime(S.ses_DateTimeDisconnection) IS S.ses_DateTimeDisconnection
          AND S.ses_DateTimeConnection <= S.ses_DateTimeDisconnection))
          GROUP BY mac, span, bucket;
`;

/** Every column of `devicesColumnsV11` as it was (frozen with it). */
const sameButLastConnectionV11 = devicesColumnsV11.map((c) => `OLD.${c} IS NEW.${c}`).join(' AND ');

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
  {
    description:
      'Per-device history counts (all time, per day, per month) kept by triggers on Events and Sessions; open-session index',
    up(db) {
      db.exec(`
        -- Per-device counts kept by triggers, so that GET /device reads a few rows instead of
        -- recounting a device's history, and rows written by any process (the sqlite3 CLI, an
        -- import) are counted like the scanner's. Totals cover all time. Buckets hold, per day
        -- (span 10: 'YYYY-MM-DD') and per month (span 7: 'YYYY-MM'), the counted events and the
        -- closed sessions by the time they ended and started, with the sums of those times in Unix
        -- seconds; a period's presence follows from them exactly. Rows whose times are not
        -- canonical storage text (or a session that ends before it starts) are left out of the
        -- buckets and counted as irregular: periods of such a device are recounted from the raw rows.
        CREATE TABLE DeviceHistoryTotals (
          mac TEXT PRIMARY KEY NOT NULL,
          events INTEGER NOT NULL DEFAULT 0,
          downAlerts INTEGER NOT NULL DEFAULT 0,
          sessions INTEGER NOT NULL DEFAULT 0,
          closedSeconds INTEGER NOT NULL DEFAULT 0,
          irregular INTEGER NOT NULL DEFAULT 0
        ) STRICT, WITHOUT ROWID;
        CREATE TABLE DeviceHistoryBuckets (
          mac TEXT NOT NULL,
          span INTEGER NOT NULL,
          bucket TEXT NOT NULL,
          events INTEGER NOT NULL DEFAULT 0,
          downAlerts INTEGER NOT NULL DEFAULT 0,
          ended INTEGER NOT NULL DEFAULT 0,
          endedSum INTEGER NOT NULL DEFAULT 0,
          started INTEGER NOT NULL DEFAULT 0,
          startedSum INTEGER NOT NULL DEFAULT 0,
          PRIMARY KEY (mac, span, bucket)
        ) STRICT, WITHOUT ROWID;
        -- Open sessions of a device (they count in every period and end "now").
        CREATE INDEX Sessions_mac_open ON Sessions (ses_MAC, ses_DateTimeConnection)
          WHERE ses_DateTimeDisconnection IS NULL OR ses_StillConnected = 1;

        CREATE TRIGGER Events_counts_insert AFTER INSERT ON Events
        WHEN NEW.eve_EventType NOT IN ('Connected', 'Disconnected') BEGIN
    INSERT INTO DeviceHistoryTotals (mac, events, downAlerts, irregular)
      SELECT NEW.eve_MAC, 1, 1 * (NEW.eve_EventType = 'Device Down'),
        1 * (datetime(NEW.eve_DateTime) IS NOT NEW.eve_DateTime)
      WHERE NEW.eve_EventType NOT IN ('Connected', 'Disconnected')
      ON CONFLICT (mac) DO UPDATE SET events = events + excluded.events,
        downAlerts = downAlerts + excluded.downAlerts, irregular = irregular + excluded.irregular;
    INSERT INTO DeviceHistoryBuckets (mac, span, bucket, events, downAlerts)
      SELECT NEW.eve_MAC, v.column1, substr(NEW.eve_DateTime, 1, v.column1), 1,
        1 * (NEW.eve_EventType = 'Device Down')
      FROM (VALUES (10), (7)) AS v
      WHERE NEW.eve_EventType NOT IN ('Connected', 'Disconnected')
        AND datetime(NEW.eve_DateTime) IS NEW.eve_DateTime
      ON CONFLICT (mac, span, bucket) DO UPDATE SET events = events + excluded.events,
        downAlerts = downAlerts + excluded.downAlerts;
        END;
        CREATE TRIGGER Events_counts_delete AFTER DELETE ON Events
        WHEN OLD.eve_EventType NOT IN ('Connected', 'Disconnected') BEGIN
    INSERT INTO DeviceHistoryTotals (mac, events, downAlerts, irregular)
      SELECT OLD.eve_MAC, -1, -1 * (OLD.eve_EventType = 'Device Down'),
        -1 * (datetime(OLD.eve_DateTime) IS NOT OLD.eve_DateTime)
      WHERE OLD.eve_EventType NOT IN ('Connected', 'Disconnected')
      ON CONFLICT (mac) DO UPDATE SET events = events + excluded.events,
        downAlerts = downAlerts + excluded.downAlerts, irregular = irregular + excluded.irregular;
    INSERT INTO DeviceHistoryBuckets (mac, span, bucket, events, downAlerts)
      SELECT OLD.eve_MAC, v.column1, substr(OLD.eve_DateTime, 1, v.column1), -1,
        -1 * (OLD.eve_EventType = 'Device Down')
      FROM (VALUES (10), (7)) AS v
      WHERE OLD.eve_EventType NOT IN ('Connected', 'Disconnected')
        AND datetime(OLD.eve_DateTime) IS OLD.eve_DateTime
      ON CONFLICT (mac, span, bucket) DO UPDATE SET events = events + excluded.events,
        downAlerts = downAlerts + excluded.downAlerts;
        END;
        CREATE TRIGGER Events_counts_update AFTER UPDATE OF eve_MAC, eve_DateTime, eve_EventType ON Events
        WHEN OLD.eve_EventType NOT IN ('Connected', 'Disconnected') OR NEW.eve_EventType NOT IN ('Connected', 'Disconnected') BEGIN
    INSERT INTO DeviceHistoryTotals (mac, events, downAlerts, irregular)
      SELECT OLD.eve_MAC, -1, -1 * (OLD.eve_EventType = 'Device Down'),
        -1 * (datetime(OLD.eve_DateTime) IS NOT OLD.eve_DateTime)
      WHERE OLD.eve_EventType NOT IN ('Connected', 'Disconnected')
      ON CONFLICT (mac) DO UPDATE SET events = events + excluded.events,
        downAlerts = downAlerts + excluded.downAlerts, irregular = irregular + excluded.irregular;
    INSERT INTO DeviceHistoryBuckets (mac, span, bucket, events, downAlerts)
      SELECT OLD.eve_MAC, v.column1, substr(OLD.eve_DateTime, 1, v.column1), -1,
        -1 * (OLD.eve_EventType = 'Device Down')
      FROM (VALUES (10), (7)) AS v
      WHERE OLD.eve_EventType NOT IN ('Connected', 'Disconnected')
        AND datetime(OLD.eve_DateTime) IS OLD.eve_DateTime
      ON CONFLICT (mac, span, bucket) DO UPDATE SET events = events + excluded.events,
        downAlerts = downAlerts + excluded.downAlerts;
    INSERT INTO DeviceHistoryTotals (mac, events, downAlerts, irregular)
      SELECT NEW.eve_MAC, 1, 1 * (NEW.eve_EventType = 'Device Down'),
        1 * (datetime(NEW.eve_DateTime) IS NOT NEW.eve_DateTime)
      WHERE NEW.eve_EventType NOT IN ('Connected', 'Disconnected')
      ON CONFLICT (mac) DO UPDATE SET events = events + excluded.events,
        downAlerts = downAlerts + excluded.downAlerts, irregular = irregular + excluded.irregular;
    INSERT INTO DeviceHistoryBuckets (mac, span, bucket, events, downAlerts)
      SELECT NEW.eve_MAC, v.column1, substr(NEW.eve_DateTime, 1, v.column1), 1,
        1 * (NEW.eve_EventType = 'Device Down')
      FROM (VALUES (10), (7)) AS v
      WHERE NEW.eve_EventType NOT IN ('Connected', 'Disconnected')
        AND datetime(NEW.eve_DateTime) IS NEW.eve_DateTime
      ON CONFLICT (mac, span, bucket) DO UPDATE SET events = events + excluded.events,
        downAlerts = downAlerts + excluded.downAlerts;
        END;
        CREATE TRIGGER Sessions_counts_insert AFTER INSERT ON Sessions BEGIN
    INSERT INTO DeviceHistoryTotals (mac, sessions, closedSeconds, irregular)
      SELECT NEW.ses_MAC, 1 * ((NEW.ses_DateTimeDisconnection IS NULL OR NEW.ses_StillConnected = 1) OR NEW.ses_DateTimeDisconnection > ''),
        1 * (CASE WHEN (NEW.ses_DateTimeDisconnection IS NULL OR NEW.ses_StillConnected = 1) OR NOT ((NEW.ses_DateTimeDisconnection IS NULL OR NEW.ses_StillConnected = 1) OR NEW.ses_DateTimeDisconnection > '') THEN 0
          ELSE COALESCE(MAX(0, unixepoch(NEW.ses_DateTimeDisconnection) - unixepoch(NEW.ses_DateTimeConnection)), 0) END),
        1 * (NOT (NEW.ses_DateTimeDisconnection IS NULL OR NEW.ses_StillConnected = 1) AND NOT (NOT (NEW.ses_DateTimeDisconnection IS NULL OR NEW.ses_StillConnected = 1) AND NEW.ses_DateTimeConnection IS NOT NULL
          AND datetime(NEW.ses_DateTimeConnection) IS NEW.ses_DateTimeConnection
          AND datetime(NEW.ses_DateTimeDisconnection) IS NEW.ses_DateTimeDisconnection
          AND NEW.ses_DateTimeConnection <= NEW.ses_DateTimeDisconnection))
      WHERE true
      ON CONFLICT (mac) DO UPDATE SET sessions = sessions + excluded.sessions,
        closedSeconds = closedSeconds + excluded.closedSeconds, irregular = irregular + excluded.irregular;
    INSERT INTO DeviceHistoryBuckets (mac, span, bucket, ended, endedSum, started, startedSum)
      SELECT NEW.ses_MAC, v.column1,
        substr(CASE v.column2 WHEN 0 THEN NEW.ses_DateTimeDisconnection ELSE NEW.ses_DateTimeConnection END, 1, v.column1),
        1 * (v.column2 = 0), 1 * (v.column2 = 0) * unixepoch(NEW.ses_DateTimeDisconnection),
        1 * (v.column2 = 1), 1 * (v.column2 = 1) * unixepoch(NEW.ses_DateTimeConnection)
      FROM (VALUES (10, 0), (7, 0), (10, 1), (7, 1)) AS v
      WHERE (NOT (NEW.ses_DateTimeDisconnection IS NULL OR NEW.ses_StillConnected = 1) AND NEW.ses_DateTimeConnection IS NOT NULL
          AND datetime(NEW.ses_DateTimeConnection) IS NEW.ses_DateTimeConnection
          AND datetime(NEW.ses_DateTimeDisconnection) IS NEW.ses_DateTimeDisconnection
          AND NEW.ses_DateTimeConnection <= NEW.ses_DateTimeDisconnection)
      ON CONFLICT (mac, span, bucket) DO UPDATE SET ended = ended + excluded.ended,
        endedSum = endedSum + excluded.endedSum, started = started + excluded.started,
        startedSum = startedSum + excluded.startedSum;
        END;
        CREATE TRIGGER Sessions_counts_delete AFTER DELETE ON Sessions BEGIN
    INSERT INTO DeviceHistoryTotals (mac, sessions, closedSeconds, irregular)
      SELECT OLD.ses_MAC, -1 * ((OLD.ses_DateTimeDisconnection IS NULL OR OLD.ses_StillConnected = 1) OR OLD.ses_DateTimeDisconnection > ''),
        -1 * (CASE WHEN (OLD.ses_DateTimeDisconnection IS NULL OR OLD.ses_StillConnected = 1) OR NOT ((OLD.ses_DateTimeDisconnection IS NULL OR OLD.ses_StillConnected = 1) OR OLD.ses_DateTimeDisconnection > '') THEN 0
          ELSE COALESCE(MAX(0, unixepoch(OLD.ses_DateTimeDisconnection) - unixepoch(OLD.ses_DateTimeConnection)), 0) END),
        -1 * (NOT (OLD.ses_DateTimeDisconnection IS NULL OR OLD.ses_StillConnected = 1) AND NOT (NOT (OLD.ses_DateTimeDisconnection IS NULL OR OLD.ses_StillConnected = 1) AND OLD.ses_DateTimeConnection IS NOT NULL
          AND datetime(OLD.ses_DateTimeConnection) IS OLD.ses_DateTimeConnection
          AND datetime(OLD.ses_DateTimeDisconnection) IS OLD.ses_DateTimeDisconnection
          AND OLD.ses_DateTimeConnection <= OLD.ses_DateTimeDisconnection))
      WHERE true
      ON CONFLICT (mac) DO UPDATE SET sessions = sessions + excluded.sessions,
        closedSeconds = closedSeconds + excluded.closedSeconds, irregular = irregular + excluded.irregular;
    INSERT INTO DeviceHistoryBuckets (mac, span, bucket, ended, endedSum, started, startedSum)
      SELECT OLD.ses_MAC, v.column1,
        substr(CASE v.column2 WHEN 0 THEN OLD.ses_DateTimeDisconnection ELSE OLD.ses_DateTimeConnection END, 1, v.column1),
        -1 * (v.column2 = 0), -1 * (v.column2 = 0) * unixepoch(OLD.ses_DateTimeDisconnection),
        -1 * (v.column2 = 1), -1 * (v.column2 = 1) * unixepoch(OLD.ses_DateTimeConnection)
      FROM (VALUES (10, 0), (7, 0), (10, 1), (7, 1)) AS v
      WHERE (NOT (OLD.ses_DateTimeDisconnection IS NULL OR OLD.ses_StillConnected = 1) AND OLD.ses_DateTimeConnection IS NOT NULL
          AND datetime(OLD.ses_DateTimeConnection) IS OLD.ses_DateTimeConnection
          AND datetime(OLD.ses_DateTimeDisconnection) IS OLD.ses_DateTimeDisconnection
          AND OLD.ses_DateTimeConnection <= OLD.ses_DateTimeDisconnection)
      ON CONFLICT (mac, span, bucket) DO UPDATE SET ended = ended + excluded.ended,
        endedSum = endedSum + excluded.endedSum, started = started + excluded.started,
        startedSum = startedSum + excluded.startedSum;
        END;
        CREATE TRIGGER Sessions_counts_update
        AFTER UPDATE OF ses_MAC, ses_DateTimeConnection, ses_DateTimeDisconnection, ses_StillConnected ON Sessions
        BEGIN
    INSERT INTO DeviceHistoryTotals (mac, sessions, closedSeconds, irregular)
      SELECT OLD.ses_MAC, -1 * ((OLD.ses_DateTimeDisconnection IS NULL OR OLD.ses_StillConnected = 1) OR OLD.ses_DateTimeDisconnection > ''),
        -1 * (CASE WHEN (OLD.ses_DateTimeDisconnection IS NULL OR OLD.ses_StillConnected = 1) OR NOT ((OLD.ses_DateTimeDisconnection IS NULL OR OLD.ses_StillConnected = 1) OR OLD.ses_DateTimeDisconnection > '') THEN 0
          ELSE COALESCE(MAX(0, unixepoch(OLD.ses_DateTimeDisconnection) - unixepoch(OLD.ses_DateTimeConnection)), 0) END),
        -1 * (NOT (OLD.ses_DateTimeDisconnection IS NULL OR OLD.ses_StillConnected = 1) AND NOT (NOT (OLD.ses_DateTimeDisconnection IS NULL OR OLD.ses_StillConnected = 1) AND OLD.ses_DateTimeConnection IS NOT NULL
          AND datetime(OLD.ses_DateTimeConnection) IS OLD.ses_DateTimeConnection
          AND datetime(OLD.ses_DateTimeDisconnection) IS OLD.ses_DateTimeDisconnection
          AND OLD.ses_DateTimeConnection <= OLD.ses_DateTimeDisconnection))
      WHERE true
      ON CONFLICT (mac) DO UPDATE SET sessions = sessions + excluded.sessions,
        closedSeconds = closedSeconds + excluded.closedSeconds, irregular = irregular + excluded.irregular;
    INSERT INTO DeviceHistoryBuckets (mac, span, bucket, ended, endedSum, started, startedSum)
      SELECT OLD.ses_MAC, v.column1,
        substr(CASE v.column2 WHEN 0 THEN OLD.ses_DateTimeDisconnection ELSE OLD.ses_DateTimeConnection END, 1, v.column1),
        -1 * (v.column2 = 0), -1 * (v.column2 = 0) * unixepoch(OLD.ses_DateTimeDisconnection),
        -1 * (v.column2 = 1), -1 * (v.column2 = 1) * unixepoch(OLD.ses_DateTimeConnection)
      FROM (VALUES (10, 0), (7, 0), (10, 1), (7, 1)) AS v
      WHERE (NOT (OLD.ses_DateTimeDisconnection IS NULL OR OLD.ses_StillConnected = 1) AND OLD.ses_DateTimeConnection IS NOT NULL
          AND datetime(OLD.ses_DateTimeConnection) IS OLD.ses_DateTimeConnection
          AND datetime(OLD.ses_DateTimeDisconnection) IS OLD.ses_DateTimeDisconnection
          AND OLD.ses_DateTimeConnection <= OLD.ses_DateTimeDisconnection)
      ON CONFLICT (mac, span, bucket) DO UPDATE SET ended = ended + excluded.ended,
        endedSum = endedSum + excluded.endedSum, started = started + excluded.started,
        startedSum = startedSum + excluded.startedSum;
    INSERT INTO DeviceHistoryTotals (mac, sessions, closedSeconds, irregular)
      SELECT NEW.ses_MAC, 1 * ((NEW.ses_DateTimeDisconnection IS NULL OR NEW.ses_StillConnected = 1) OR NEW.ses_DateTimeDisconnection > ''),
        1 * (CASE WHEN (NEW.ses_DateTimeDisconnection IS NULL OR NEW.ses_StillConnected = 1) OR NOT ((NEW.ses_DateTimeDisconnection IS NULL OR NEW.ses_StillConnected = 1) OR NEW.ses_DateTimeDisconnection > '') THEN 0
          ELSE COALESCE(MAX(0, unixepoch(NEW.ses_DateTimeDisconnection) - unixepoch(NEW.ses_DateTimeConnection)), 0) END),
        1 * (NOT (NEW.ses_DateTimeDisconnection IS NULL OR NEW.ses_StillConnected = 1) AND NOT (NOT (NEW.ses_DateTimeDisconnection IS NULL OR NEW.ses_StillConnected = 1) AND NEW.ses_DateTimeConnection IS NOT NULL
          AND datetime(NEW.ses_DateTimeConnection) IS NEW.ses_DateTimeConnection
          AND datetime(NEW.ses_DateTimeDisconnection) IS NEW.ses_DateTimeDisconnection
          AND NEW.ses_DateTimeConnection <= NEW.ses_DateTimeDisconnection))
      WHERE true
      ON CONFLICT (mac) DO UPDATE SET sessions = sessions + excluded.sessions,
        closedSeconds = closedSeconds + excluded.closedSeconds, irregular = irregular + excluded.irregular;
    INSERT INTO DeviceHistoryBuckets (mac, span, bucket, ended, endedSum, started, startedSum)
      SELECT NEW.ses_MAC, v.column1,
        substr(CASE v.column2 WHEN 0 THEN NEW.ses_DateTimeDisconnection ELSE NEW.ses_DateTimeConnection END, 1, v.column1),
        1 * (v.column2 = 0), 1 * (v.column2 = 0) * unixepoch(NEW.ses_DateTimeDisconnection),
        1 * (v.column2 = 1), 1 * (v.column2 = 1) * unixepoch(NEW.ses_DateTimeConnection)
      FROM (VALUES (10, 0), (7, 0), (10, 1), (7, 1)) AS v
      WHERE (NOT (NEW.ses_DateTimeDisconnection IS NULL OR NEW.ses_StillConnected = 1) AND NEW.ses_DateTimeConnection IS NOT NULL
          AND datetime(NEW.ses_DateTimeConnection) IS NEW.ses_DateTimeConnection
          AND datetime(NEW.ses_DateTimeDisconnection) IS NEW.ses_DateTimeDisconnection
          AND NEW.ses_DateTimeConnection <= NEW.ses_DateTimeDisconnection)
      ON CONFLICT (mac, span, bucket) DO UPDATE SET ended = ended + excluded.ended,
        endedSum = endedSum + excluded.endedSum, started = started + excluded.started,
        startedSum = startedSum + excluded.startedSum;
        END;

        ${historyCountsBackfill}
      `);
    },
  },
  {
    description:
      'NotificationPayloads: eventCount and preview (the first 20 events), so that GET /notifications never reads a whole payload; Notifications by payload (pruning)',
    up(db) {
      db.exec(`
        -- Pruning deletes a payload once no row refers to it (and the foreign key looks it up).
        CREATE INDEX Notifications_payload ON Notifications (payloadId);
        ALTER TABLE NotificationPayloads ADD COLUMN eventCount INTEGER NOT NULL DEFAULT 0;
        -- JSON array of the first 20 events of events (GET /notifications shows these).
        ALTER TABLE NotificationPayloads ADD COLUMN preview TEXT NOT NULL DEFAULT '[]';
        UPDATE NotificationPayloads SET eventCount = json_array_length(events),
          preview = (SELECT json_group_array(json(value))
                     FROM (SELECT value FROM json_each(events) ORDER BY key LIMIT 20));
      `);
    },
  },
  {
    description:
      'Presence users can believe: devCanSleep, devMissesBeforeAbsent, devPrimaryIPv6; ScanState.flapping',
    up(db) {
      // Added columns with constant defaults: existing rows keep every value and get the default.
      db.exec(`
        ALTER TABLE Devices ADD COLUMN devCanSleep INTEGER NOT NULL DEFAULT 0 CHECK (devCanSleep IN (0, 1));
        ALTER TABLE Devices ADD COLUMN devMissesBeforeAbsent INTEGER NOT NULL DEFAULT 0 CHECK (devMissesBeforeAbsent BETWEEN 0 AND 100);
        ALTER TABLE Devices ADD COLUMN devPrimaryIPv6 TEXT NOT NULL DEFAULT '';
        -- Whether the device flaps (the scanner re-evaluates it each cycle from the Events table).
        ALTER TABLE ScanState ADD COLUMN flapping INTEGER NOT NULL DEFAULT 0 CHECK (flapping IN (0, 1));
      `);
    },
  },
  {
    description: 'devNameSource: where a device name came from (user, import, dhcp, mdns, netbios, dns)',
    up(db) {
      // Every name stored before this migration was written by a person or an import: protect it
      // as a user name, so that automatic naming never replaces it.
      db.exec(`
        ALTER TABLE Devices ADD COLUMN devNameSource TEXT NOT NULL DEFAULT '';
        UPDATE Devices SET devNameSource = 'user' WHERE devName NOT IN ('', '(unknown)');
      `);
    },
  },
  {
    description:
      'Security watch: Devices.devWatchPorts; DevicePorts (the open ports of the last port watch); WatchMemory (what the watch remembers between runs: current IP conflicts, gateway MACs, port scan times)',
    up(db) {
      db.exec(`
        ALTER TABLE Devices ADD COLUMN devWatchPorts INTEGER NOT NULL DEFAULT 0 CHECK (devWatchPorts IN (0, 1));
        CREATE TABLE DevicePorts (
          dpo_MAC TEXT NOT NULL,
          dpo_Port INTEGER NOT NULL CHECK (dpo_Port BETWEEN 1 AND 65535),
          dpo_Protocol TEXT NOT NULL CHECK (dpo_Protocol IN ('tcp', 'udp')),
          dpo_Service TEXT NOT NULL DEFAULT '',
          dpo_Product TEXT NOT NULL DEFAULT '',
          dpo_Version TEXT NOT NULL DEFAULT '',
          dpo_FirstSeen TEXT NOT NULL,
          dpo_LastSeen TEXT NOT NULL,
          PRIMARY KEY (dpo_MAC, dpo_Port, dpo_Protocol)
        ) STRICT, WITHOUT ROWID;
        CREATE TABLE WatchMemory (
          wat_Kind TEXT NOT NULL,
          wat_Key TEXT NOT NULL,
          wat_Value TEXT NOT NULL,
          PRIMARY KEY (wat_Kind, wat_Key)
        ) STRICT, WITHOUT ROWID;
      `);
    },
  },
  {
    description:
      'DeviceMacs: the other MACs of a device (merged or linked random MACs); a MAC is either a device or an alias, never both',
    up(db) {
      // No foreign key: the device store deletes a device's aliases with it, in the same
      // transaction, and an INSERT OR REPLACE of a Devices row (an import) must not drop them.
      db.exec(`
        CREATE TABLE DeviceMacs (
          dma_MAC TEXT PRIMARY KEY NOT NULL,
          dma_DevMac TEXT NOT NULL,
          dma_FirstSeen TEXT,
          dma_LastSeen TEXT,
          dma_Reason TEXT NOT NULL CHECK (dma_Reason IN ('merge', 'dhcp-client-id', 'dhcp-hostname'))
        ) WITHOUT ROWID;
        CREATE INDEX DeviceMacs_device ON DeviceMacs (dma_DevMac, dma_MAC);
        CREATE TRIGGER DeviceMacs_not_a_device BEFORE INSERT ON DeviceMacs
        WHEN EXISTS (SELECT 1 FROM Devices WHERE devMac = NEW.dma_MAC) BEGIN
          SELECT RAISE(ABORT, 'DeviceMacs: this MAC is a device of its own');
        END;
        CREATE TRIGGER Devices_not_an_alias BEFORE INSERT ON Devices
        WHEN EXISTS (SELECT 1 FROM DeviceMacs WHERE dma_MAC = NEW.devMac) BEGIN
          SELECT RAISE(ABORT, 'Devices: this MAC is an alias of another device');
        END;
      `);
    },
  },
  {
    description:
      'Probes: the remote scanners that report to this hub (token stored as a SHA-256 hash) and ProbeCycles (the cycleIds applied per probe, so that a repeated upload changes nothing)',
    up(db) {
      db.exec(`
        CREATE TABLE Probes (
          prb_Id TEXT PRIMARY KEY NOT NULL,
          prb_Name TEXT NOT NULL UNIQUE,
          prb_Site TEXT NOT NULL,
          prb_TokenHash BLOB NOT NULL,
          prb_CreatedAt TEXT NOT NULL,
          prb_Subnets TEXT NOT NULL DEFAULT '[]',
          prb_LastCycleAt TEXT,
          prb_LastCycleStartedAt TEXT,
          prb_Status TEXT NOT NULL DEFAULT 'never' CHECK (prb_Status IN ('never', 'online', 'offline')),
          prb_SpooledCycles INTEGER NOT NULL DEFAULT 0,
          prb_DroppedCycles INTEGER NOT NULL DEFAULT 0
        ) STRICT, WITHOUT ROWID;
        CREATE TABLE ProbeCycles (
          pcy_ProbeId TEXT NOT NULL REFERENCES Probes (prb_Id) ON DELETE CASCADE,
          pcy_CycleId TEXT NOT NULL,
          pcy_AppliedAt TEXT NOT NULL,
          PRIMARY KEY (pcy_ProbeId, pcy_CycleId)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX ProbeCycles_applied ON ProbeCycles (pcy_ProbeId, pcy_AppliedAt);
        -- A probe's cycle reads its own site's devices (loadSitePresence), not every device.
        CREATE INDEX Devices_site ON Devices (devSite);
      `);
    },
  },
  {
    description:
      'The change log: triggers append every device whose answer a write changed (by any process) to netkeep_change_log, which the other processes read when PRAGMA data_version moves; a Devices update that moved only devLastConnection records its new value',
    up(db) {
      // One row per device a row change touched, in commit order (writers are serialised; rowids
      // are never reused: pruning keeps the newest row). 'seen' is the new devLastConnection when
      // that was the only column of the device's row to change (its answer differs by that value
      // only), otherwise NULL: the answer must be read again. The triggers mirror the TEMP
      // triggers of device-sql.ts (changeTrackingSql): the device, its parent when a field its
      // parent shows changed, aliases, history rows and the scanner's memory. Pruned by the insert
      // trigger: every 1,024th row deletes the rows more than 131,072 behind (about ten scan cycles
      // of 5,000 devices); a reader further behind is told that everything changed.
      // Not STRICT and no NOT NULL: a row another program writes (an Event without a MAC, a time
      // that is not text) must not make its write fail; the readers skip what is not a MAC.
      // The Devices columns are those of version 11, listed literally (frozen: `devicesColumnsV11`);
      // a later migration that adds a column must recreate the Devices update triggers with it
      // (test/store/sqlite/change-log.test.ts checks the list against the table).
      // Every column but devLastConnection unchanged: the update trigger's WHEN (something else
      // moved) and its 'seen' value (only devLastConnection moved) both test it.
      const sameButLastConnection = `AND ${sameButLastConnectionV11}`;
      db.exec(`
        CREATE TABLE netkeep_change_log (
          id INTEGER PRIMARY KEY,
          mac TEXT,
          seen TEXT
        );
        CREATE TRIGGER netkeep_changes_prune AFTER INSERT ON netkeep_change_log
        WHEN NEW.id % 1024 = 0 BEGIN
          DELETE FROM netkeep_change_log WHERE id <= NEW.id - 131072;
        END;
        CREATE TRIGGER netkeep_changes_devices_insert AFTER INSERT ON Devices BEGIN
          INSERT INTO netkeep_change_log (mac) SELECT NEW.devMac UNION ALL
            SELECT NEW.devParentMAC WHERE NEW.devParentMAC != '';
        END;
        CREATE TRIGGER netkeep_changes_devices_delete AFTER DELETE ON Devices BEGIN
          INSERT INTO netkeep_change_log (mac) SELECT OLD.devMac UNION ALL
            SELECT OLD.devParentMAC WHERE OLD.devParentMAC != '';
        END;
        CREATE TRIGGER netkeep_changes_devices_update AFTER UPDATE ON Devices
        WHEN NOT (OLD.devLastConnection IS NEW.devLastConnection
            ${sameButLastConnection}) BEGIN
          INSERT INTO netkeep_change_log (mac, seen) SELECT NEW.devMac,
            CASE WHEN NEW.devLastConnection IS NOT NULL
              ${sameButLastConnection}
            THEN NEW.devLastConnection END;
          INSERT INTO netkeep_change_log (mac) SELECT OLD.devMac WHERE OLD.devMac IS NOT NEW.devMac;
          INSERT INTO netkeep_change_log (mac) SELECT parent FROM (SELECT OLD.devParentMAC AS parent
              UNION ALL SELECT NEW.devParentMAC)
            WHERE parent != '' AND (OLD.devParentMAC IS NOT NEW.devParentMAC OR OLD.devName IS NOT NEW.devName
              OR OLD.devPresentLastScan IS NOT NEW.devPresentLastScan OR OLD.devAlertDown IS NOT NEW.devAlertDown
              OR OLD.devParentRelType IS NOT NEW.devParentRelType OR OLD.devParentPort IS NOT NEW.devParentPort
              OR OLD.devLastIP IS NOT NEW.devLastIP OR OLD.devMac IS NOT NEW.devMac);
        END;
        CREATE TRIGGER netkeep_changes_aliases_insert AFTER INSERT ON DeviceMacs BEGIN
          INSERT INTO netkeep_change_log (mac) VALUES (NEW.dma_DevMac);
        END;
        CREATE TRIGGER netkeep_changes_aliases_delete AFTER DELETE ON DeviceMacs BEGIN
          INSERT INTO netkeep_change_log (mac) VALUES (OLD.dma_DevMac);
        END;
        CREATE TRIGGER netkeep_changes_aliases_update AFTER UPDATE OF dma_DevMac ON DeviceMacs BEGIN
          INSERT INTO netkeep_change_log (mac) VALUES (OLD.dma_DevMac), (NEW.dma_DevMac);
        END;
        CREATE TRIGGER netkeep_changes_events_insert AFTER INSERT ON Events BEGIN
          INSERT INTO netkeep_change_log (mac) VALUES (NEW.eve_MAC);
        END;
        CREATE TRIGGER netkeep_changes_events_delete AFTER DELETE ON Events BEGIN
          INSERT INTO netkeep_change_log (mac) VALUES (OLD.eve_MAC);
        END;
        CREATE TRIGGER netkeep_changes_events_update AFTER UPDATE ON Events BEGIN
          INSERT INTO netkeep_change_log (mac) VALUES (OLD.eve_MAC), (NEW.eve_MAC);
        END;
        CREATE TRIGGER netkeep_changes_sessions_insert AFTER INSERT ON Sessions BEGIN
          INSERT INTO netkeep_change_log (mac) VALUES (NEW.ses_MAC);
        END;
        CREATE TRIGGER netkeep_changes_sessions_delete AFTER DELETE ON Sessions BEGIN
          INSERT INTO netkeep_change_log (mac) VALUES (OLD.ses_MAC);
        END;
        CREATE TRIGGER netkeep_changes_sessions_update AFTER UPDATE ON Sessions BEGIN
          INSERT INTO netkeep_change_log (mac) VALUES (OLD.ses_MAC), (NEW.ses_MAC);
        END;
        CREATE TRIGGER netkeep_changes_scanstate_insert AFTER INSERT ON ScanState BEGIN
          INSERT INTO netkeep_change_log (mac) VALUES (NEW.mac);
        END;
        CREATE TRIGGER netkeep_changes_scanstate_delete AFTER DELETE ON ScanState BEGIN
          INSERT INTO netkeep_change_log (mac) VALUES (OLD.mac);
        END;
        CREATE TRIGGER netkeep_changes_scanstate_update AFTER UPDATE ON ScanState BEGIN
          INSERT INTO netkeep_change_log (mac) VALUES (OLD.mac), (NEW.mac);
        END;
      `);
    },
  },
  {
    description:
      'The Devices update trigger of the change log split in four, each with a WHEN of its own: a change, a device seen again, a new MAC, a parent to tell',
    up(db) {
      // Same rows as version 12's single trigger (one per device whose answer changed, its new
      // devLastConnection when that was all that moved, the old MAC of a renamed row, a parent
      // when a field its answer shows changed), cheaper to fire: each trigger's WHEN stops at the
      // first column that tells, and none runs a statement that then inserts nothing. A change of
      // one field, the commonest write, compared every column twice and ran three INSERTs.
      // The columns are version 11's (frozen, `devicesColumnsV11`).
      db.exec(`
        DROP TRIGGER netkeep_changes_devices_update;
        CREATE TRIGGER netkeep_changes_devices_update AFTER UPDATE ON Devices
        WHEN NOT (${sameButLastConnectionV11})
          OR (OLD.devLastConnection IS NOT NEW.devLastConnection AND NEW.devLastConnection IS NULL) BEGIN
          INSERT INTO netkeep_change_log (mac) VALUES (NEW.devMac);
        END;
        CREATE TRIGGER netkeep_changes_devices_seen AFTER UPDATE ON Devices
        WHEN OLD.devLastConnection IS NOT NEW.devLastConnection AND NEW.devLastConnection IS NOT NULL
          AND ${sameButLastConnectionV11} BEGIN
          INSERT INTO netkeep_change_log (mac, seen) VALUES (NEW.devMac, NEW.devLastConnection);
        END;
        CREATE TRIGGER netkeep_changes_devices_renamed AFTER UPDATE OF devMac ON Devices
        WHEN OLD.devMac IS NOT NEW.devMac BEGIN
          INSERT INTO netkeep_change_log (mac) VALUES (OLD.devMac);
        END;
        CREATE TRIGGER netkeep_changes_devices_parents AFTER UPDATE ON Devices
        WHEN (OLD.devParentMAC != '' OR NEW.devParentMAC != '')
          AND (OLD.devParentMAC IS NOT NEW.devParentMAC OR OLD.devName IS NOT NEW.devName
            OR OLD.devPresentLastScan IS NOT NEW.devPresentLastScan OR OLD.devAlertDown IS NOT NEW.devAlertDown
            OR OLD.devParentRelType IS NOT NEW.devParentRelType OR OLD.devParentPort IS NOT NEW.devParentPort
            OR OLD.devLastIP IS NOT NEW.devLastIP OR OLD.devMac IS NOT NEW.devMac) BEGIN
          INSERT INTO netkeep_change_log (mac)
            SELECT OLD.devParentMAC WHERE OLD.devParentMAC != ''
            UNION ALL SELECT NEW.devParentMAC WHERE NEW.devParentMAC != '';
        END;
      `);
    },
  },
  {
    description:
      'The change log can be held: while netkeep_change_log_held has a row, the log triggers append nothing, and the transaction that holds it appends one row per device it changed itself',
    up(db) {
      // A scan cycle touches a device in up to five tables (its row, an event, a session closed
      // and one opened, the scanner's memory), and each row's trigger appended a row of its own:
      // ~19,000 rows for ~6,000 devices, which every other process then read. The cycle's
      // transaction inserts the row, writes, deletes it and appends its devices once each
      // (change-tracking.ts: `ChangeTracking.logOnce`). The row never outlives the transaction that
      // inserts it, so every other writer (another program, the sqlite3 shell) is logged as before.
      // RAISE(IGNORE) drops just the log row: the write whose trigger appended it goes on.
      db.exec(`
        CREATE TABLE netkeep_change_log_held (held INTEGER);
        CREATE TRIGGER netkeep_changes_held BEFORE INSERT ON netkeep_change_log
        WHEN EXISTS (SELECT 1 FROM netkeep_change_log_held) BEGIN
          SELECT RAISE(IGNORE);
        END;
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

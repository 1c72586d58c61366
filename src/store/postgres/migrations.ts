/**
 * The PostgreSQL store's versioned schema migrations. `netkeep_migrations` holds one row per
 * migration applied; each runs in its own transaction under an advisory lock, so that servers
 * starting together on one database migrate it once, and a failure leaves the previous version.
 * Released migrations are frozen literal SQL, like SQLite's (src/store/sqlite/migrations.ts): never edit one;
 * append a new one.
 *
 * The tables, columns and indexes have SQLite's names, quoted (PostgreSQL folds unquoted names to
 * lower case), so that one query text can read both stores. Both schemas must stay the same:
 * test/store/postgres/schema-parity.test.ts compares them after all migrations of each. What
 * differs, and why:
 * - INTEGER is BIGINT (SQLite's integers are 64-bit); TEXT is TEXT COLLATE "C", so that text sorts
 *   and compares by bytes like SQLite's BINARY collation (times are compared as text).
 * - Events and Sessions have an explicit "rowid" (SQLite's is implicit; the lists page by it), and
 *   SQLite's `INTEGER PRIMARY KEY` ids are identity columns.
 * - The history counts are kept by statement-level triggers over transition tables in PL/pgSQL
 *   with the same arithmetic as SQLite's row triggers: a batch of rows is counted in one upsert per
 *   table instead of one per row. `netkeep_canonical_time(t)` is SQLite's `datetime(t) IS t` and
 *   `netkeep_unixepoch(t)` its `unixepoch(t)` for the text forms SQLite reads (not Julian day
 *   numbers, which netkeep never stores).
 * - `netkeep_*` tables are PostgreSQL-only bookkeeping (this version table, the store's metadata).
 */
import type { PoolClient } from 'pg';
import { devicesColumnsV11 } from '../devices-columns-v11.js';

/** Every column of `devicesColumnsV11` as it was, but the MAC the rows are joined on (frozen with it). */
const sameButLastConnectionV11 = devicesColumnsV11
  .filter((c) => c !== 'devMac')
  .map((c) => `n."${c}" IS NOT DISTINCT FROM o."${c}"`)
  .join(' AND ');

export interface PostgresMigration {
  readonly description: string;
  /**
   * The SQLite schema version (src/store/sqlite/migrations.ts, its count of migrations) this migration
   * brings the PostgreSQL schema to: `npm run migrate-store` copies only a SQLite store at the
   * version of the last PostgreSQL migration.
   */
  readonly sqliteVersion: number;
  readonly sql: string;
}

export const postgresMigrations: readonly PostgresMigration[] = [
  {
    description:
      "SQLite's schema at its version 10: Devices, Events, Sessions, ScanState, the alert outbox, the history counts and their triggers, DevicePorts, WatchMemory, DeviceMacs",
    sqliteVersion: 10,
    sql: `
        CREATE TABLE netkeep_store (
          key TEXT COLLATE "C" PRIMARY KEY NOT NULL,
          value TEXT COLLATE "C" NOT NULL
        );

        CREATE TABLE "Devices" (
          "devMac" TEXT COLLATE "C" PRIMARY KEY NOT NULL,
          "devName" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devOwner" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devType" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devVendor" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devFavorite" BIGINT NOT NULL DEFAULT 0 CHECK ("devFavorite" IN (0, 1)),
          "devGroup" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devComments" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devFirstConnection" TEXT COLLATE "C",
          "devLastConnection" TEXT COLLATE "C",
          "devLastIP" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devStaticIP" BIGINT NOT NULL DEFAULT 0 CHECK ("devStaticIP" IN (0, 1)),
          "devScan" BIGINT NOT NULL DEFAULT 0 CHECK ("devScan" IN (0, 1)),
          "devLogEvents" BIGINT NOT NULL DEFAULT 0 CHECK ("devLogEvents" IN (0, 1)),
          "devAlertEvents" BIGINT NOT NULL DEFAULT 0 CHECK ("devAlertEvents" IN (0, 1)),
          "devAlertDown" BIGINT NOT NULL DEFAULT 0 CHECK ("devAlertDown" IN (0, 1)),
          "devSkipRepeated" BIGINT NOT NULL DEFAULT 0 CHECK ("devSkipRepeated" BETWEEN 0 AND 8760),
          "devLastNotification" TEXT COLLATE "C",
          "devPresentLastScan" BIGINT NOT NULL DEFAULT 0 CHECK ("devPresentLastScan" IN (0, 1)),
          "devIsNew" BIGINT NOT NULL DEFAULT 0 CHECK ("devIsNew" IN (0, 1)),
          "devLocation" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devIsArchived" BIGINT NOT NULL DEFAULT 0 CHECK ("devIsArchived" IN (0, 1)),
          "devParentMAC" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devParentPort" BIGINT,
          "devParentRelType" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devReqNicsOnline" BIGINT NOT NULL DEFAULT 0 CHECK ("devReqNicsOnline" IN (0, 1)),
          "devIcon" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devGUID" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devSite" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devSSID" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devSyncHubNode" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devSourcePlugin" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devCustomProps" TEXT COLLATE "C" NOT NULL DEFAULT '[]',
          "devFQDN" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devCanSleep" BIGINT NOT NULL DEFAULT 0 CHECK ("devCanSleep" IN (0, 1)),
          "devMissesBeforeAbsent" BIGINT NOT NULL DEFAULT 0 CHECK ("devMissesBeforeAbsent" BETWEEN 0 AND 100),
          "devPrimaryIPv6" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devNameSource" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "devWatchPorts" BIGINT NOT NULL DEFAULT 0 CHECK ("devWatchPorts" IN (0, 1))
        );
        CREATE INDEX "Devices_parent" ON "Devices" ("devParentMAC");
        -- SQLite's COLLATE NOCASE folds ASCII only; so does lower() under the C collation.
        CREATE INDEX "Devices_name" ON "Devices" (lower("devName"), "devMac");

        CREATE TABLE "Events" (
          "rowid" BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
          "eve_MAC" TEXT COLLATE "C" NOT NULL,
          "eve_IP" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "eve_DateTime" TEXT COLLATE "C" NOT NULL,
          "eve_EventType" TEXT COLLATE "C" NOT NULL,
          "eve_AdditionalInfo" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "eve_PendingAlertEmail" BIGINT NOT NULL DEFAULT 0,
          "eve_PairEventRowid" BIGINT
        );
        CREATE INDEX "Events_mac_time" ON "Events" ("eve_MAC", "eve_DateTime", "eve_EventType");
        CREATE INDEX "Events_time" ON "Events" ("eve_DateTime");
        CREATE INDEX "Events_type_time" ON "Events" ("eve_EventType", "eve_DateTime");

        CREATE TABLE "Sessions" (
          "rowid" BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
          "ses_MAC" TEXT COLLATE "C" NOT NULL,
          "ses_IP" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "ses_EventTypeConnection" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "ses_DateTimeConnection" TEXT COLLATE "C",
          "ses_EventTypeDisconnection" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "ses_DateTimeDisconnection" TEXT COLLATE "C",
          "ses_StillConnected" BIGINT NOT NULL DEFAULT 0,
          "ses_AdditionalInfo" TEXT COLLATE "C" NOT NULL DEFAULT ''
        );
        CREATE INDEX "Sessions_mac_connection" ON "Sessions" ("ses_MAC", "ses_DateTimeConnection");
        CREATE INDEX "Sessions_mac_stats"
          ON "Sessions" ("ses_MAC", "ses_DateTimeDisconnection", "ses_StillConnected", "ses_DateTimeConnection");
        CREATE INDEX "Sessions_disconnection" ON "Sessions" ("ses_DateTimeDisconnection");
        CREATE INDEX "Sessions_open" ON "Sessions" ("ses_MAC") WHERE "ses_StillConnected" = 1;
        CREATE INDEX "Sessions_mac_open" ON "Sessions" ("ses_MAC", "ses_DateTimeConnection")
          WHERE "ses_DateTimeDisconnection" IS NULL OR "ses_StillConnected" = 1;

        CREATE TABLE "ScanState" (
          "mac" TEXT COLLATE "C" PRIMARY KEY NOT NULL,
          "misses" BIGINT NOT NULL DEFAULT 0,
          "lastAbsence" TEXT COLLATE "C" CHECK ("lastAbsence" IN ('Disconnected', 'Device Down')),
          "flapping" BIGINT NOT NULL DEFAULT 0 CHECK ("flapping" IN (0, 1))
        );

        CREATE TABLE "NotificationPayloads" (
          "id" BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
          "events" TEXT COLLATE "C" NOT NULL,
          "eventCount" BIGINT NOT NULL DEFAULT 0,
          "preview" TEXT COLLATE "C" NOT NULL DEFAULT '[]'
        );
        CREATE TABLE "Notifications" (
          "id" BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
          "deliveryId" TEXT COLLATE "C" NOT NULL UNIQUE,
          "channel" TEXT COLLATE "C" NOT NULL CHECK ("channel" IN ('webhook', 'ntfy', 'apprise', 'mqtt')),
          "status" TEXT COLLATE "C" NOT NULL CHECK ("status" IN ('pending', 'sent', 'failed', 'skipped')),
          "attempts" BIGINT NOT NULL DEFAULT 0,
          "createdAt" TEXT COLLATE "C" NOT NULL,
          "nextAttemptAt" BIGINT,
          "sentAt" TEXT COLLATE "C",
          "lastError" TEXT COLLATE "C",
          "payloadId" BIGINT NOT NULL REFERENCES "NotificationPayloads" ("id")
        );
        CREATE INDEX "Notifications_due" ON "Notifications" ("channel", "nextAttemptAt") WHERE "status" = 'pending';
        CREATE INDEX "Notifications_status" ON "Notifications" ("status", "id");
        CREATE INDEX "Notifications_payload" ON "Notifications" ("payloadId");

        CREATE TABLE "DeviceHistoryTotals" (
          "mac" TEXT COLLATE "C" PRIMARY KEY NOT NULL,
          "events" BIGINT NOT NULL DEFAULT 0,
          "downAlerts" BIGINT NOT NULL DEFAULT 0,
          "sessions" BIGINT NOT NULL DEFAULT 0,
          "closedSeconds" BIGINT NOT NULL DEFAULT 0,
          "irregular" BIGINT NOT NULL DEFAULT 0
        );
        CREATE TABLE "DeviceHistoryBuckets" (
          "mac" TEXT COLLATE "C" NOT NULL,
          "span" BIGINT NOT NULL,
          "bucket" TEXT COLLATE "C" NOT NULL,
          "events" BIGINT NOT NULL DEFAULT 0,
          "downAlerts" BIGINT NOT NULL DEFAULT 0,
          "ended" BIGINT NOT NULL DEFAULT 0,
          "endedSum" BIGINT NOT NULL DEFAULT 0,
          "started" BIGINT NOT NULL DEFAULT 0,
          "startedSum" BIGINT NOT NULL DEFAULT 0,
          PRIMARY KEY ("mac", "span", "bucket")
        );

        CREATE TABLE "DevicePorts" (
          "dpo_MAC" TEXT COLLATE "C" NOT NULL,
          "dpo_Port" BIGINT NOT NULL CHECK ("dpo_Port" BETWEEN 1 AND 65535),
          "dpo_Protocol" TEXT COLLATE "C" NOT NULL CHECK ("dpo_Protocol" IN ('tcp', 'udp')),
          "dpo_Service" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "dpo_Product" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "dpo_Version" TEXT COLLATE "C" NOT NULL DEFAULT '',
          "dpo_FirstSeen" TEXT COLLATE "C" NOT NULL,
          "dpo_LastSeen" TEXT COLLATE "C" NOT NULL,
          PRIMARY KEY ("dpo_MAC", "dpo_Port", "dpo_Protocol")
        );
        CREATE TABLE "WatchMemory" (
          "wat_Kind" TEXT COLLATE "C" NOT NULL,
          "wat_Key" TEXT COLLATE "C" NOT NULL,
          "wat_Value" TEXT COLLATE "C" NOT NULL,
          PRIMARY KEY ("wat_Kind", "wat_Key")
        );

        CREATE TABLE "DeviceMacs" (
          "dma_MAC" TEXT COLLATE "C" PRIMARY KEY NOT NULL,
          "dma_DevMac" TEXT COLLATE "C" NOT NULL,
          "dma_FirstSeen" TEXT COLLATE "C",
          "dma_LastSeen" TEXT COLLATE "C",
          "dma_Reason" TEXT COLLATE "C" NOT NULL CHECK ("dma_Reason" IN ('merge', 'dhcp-client-id', 'dhcp-hostname'))
        );
        CREATE INDEX "DeviceMacs_device" ON "DeviceMacs" ("dma_DevMac", "dma_MAC");

        CREATE FUNCTION netkeep_devicemacs_not_a_device() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF EXISTS (SELECT 1 FROM "Devices" WHERE "devMac" = NEW."dma_MAC") THEN
            RAISE EXCEPTION 'DeviceMacs: this MAC is a device of its own' USING ERRCODE = 'integrity_constraint_violation';
          END IF;
          RETURN NEW;
        END $$;
        CREATE TRIGGER "DeviceMacs_not_a_device" BEFORE INSERT ON "DeviceMacs"
          FOR EACH ROW EXECUTE FUNCTION netkeep_devicemacs_not_a_device();
        CREATE FUNCTION netkeep_devices_not_an_alias() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF EXISTS (SELECT 1 FROM "DeviceMacs" WHERE "dma_MAC" = NEW."devMac") THEN
            RAISE EXCEPTION 'Devices: this MAC is an alias of another device' USING ERRCODE = 'integrity_constraint_violation';
          END IF;
          RETURN NEW;
        END $$;
        CREATE TRIGGER "Devices_not_an_alias" BEFORE INSERT ON "Devices"
          FOR EACH ROW EXECUTE FUNCTION netkeep_devices_not_an_alias();

        -- SQLite's datetime(t) IS t: t is storage time text 'YYYY-MM-DD HH:MM:SS' of a real date
        -- (SQLite moves Feb 30 to March) and the times SQLite's reader takes (hour 00-24).
        CREATE FUNCTION netkeep_canonical_time(t TEXT) RETURNS BOOLEAN
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
          SELECT CASE WHEN t ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$' THEN
            substr(t, 6, 2)::int BETWEEN 1 AND 12
            AND substr(t, 9, 2)::int BETWEEN 1 AND CASE substr(t, 6, 2)::int
              WHEN 2 THEN 28 + (substr(t, 1, 4)::int % 4 = 0
                AND (substr(t, 1, 4)::int % 100 <> 0 OR substr(t, 1, 4)::int % 400 = 0))::int
              ELSE 30 + (substr(t, 6, 2)::int + substr(t, 6, 2)::int / 8) % 2 END
            AND substr(t, 12, 2)::int <= 24 AND substr(t, 15, 2)::int <= 59 AND substr(t, 18, 2)::int <= 59
          ELSE false END
        $$;

        -- SQLite's unixepoch(t) for the text forms other than storage time (see netkeep_unixepoch):
        -- YYYY-MM-DD, then optionally [ T]HH:MM[:SS[.fff]] and a zone (Z or +-HH:MM); days past a
        -- month's end roll over, fractions are dropped. NULL when SQLite's would be NULL. Its
        -- regular expression with captures is slow (about half a millisecond a call), so it is the
        -- rare path only.
        CREATE FUNCTION netkeep_unixepoch_text(t TEXT) RETURNS BIGINT
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
        DECLARE
          m TEXT[];
          y BIGINT; mo BIGINT; d BIGINT; h BIGINT; mi BIGINT; s BIGINT;
          era BIGINT; yoe BIGINT; doy BIGINT; zone BIGINT := 0;
        BEGIN
          m := regexp_match(t, '^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[ T]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\\.[0-9]*)?)?\\s*([zZ]|[-+][0-9]{2}:[0-9]{2})?)?\\s*$');
          IF m IS NULL THEN RETURN NULL; END IF;
          y := m[1]::bigint; mo := m[2]::bigint; d := m[3]::bigint;
          h := coalesce(m[4]::bigint, 0); mi := coalesce(m[5]::bigint, 0); s := coalesce(m[6]::bigint, 0);
          IF mo NOT BETWEEN 1 AND 12 OR d NOT BETWEEN 1 AND 31 OR h > 24 OR mi > 59 OR s > 59 THEN
            RETURN NULL;
          END IF;
          IF m[7] IS NOT NULL AND upper(m[7]) <> 'Z' THEN
            zone := (substr(m[7], 2, 2)::bigint * 60 + substr(m[7], 5, 2)::bigint) * 60;
            IF substr(m[7], 1, 1) = '-' THEN zone := -zone; END IF;
          END IF;
          -- Days since 1970-01-01 of the proleptic Gregorian date (years counted from March).
          IF mo <= 2 THEN y := y - 1; END IF;
          era := floor(y / 400.0);
          yoe := y - era * 400;
          doy := (153 * (mo + CASE WHEN mo > 2 THEN -3 ELSE 9 END) + 2) / 5 + d - 1;
          RETURN (era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468) * 86400
            + h * 3600 + mi * 60 + s - zone;
        END $$;

        -- Days from 1970-01-01 to the first of month m of year y (proleptic Gregorian, years counted
        -- from March; the +400000 keeps the division a floor for year 0). One expression, so that
        -- PostgreSQL inlines it.
        CREATE FUNCTION netkeep_month_days(y BIGINT, m BIGINT) RETURNS BIGINT
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
          SELECT ((y - (m <= 2)::int + 400000) / 400 - 1000) * 146097
            + (y - (m <= 2)::int - ((y - (m <= 2)::int + 400000) / 400 - 1000) * 400) * 365
            + (y - (m <= 2)::int - ((y - (m <= 2)::int + 400000) / 400 - 1000) * 400) / 4
            - (y - (m <= 2)::int - ((y - (m <= 2)::int + 400000) / 400 - 1000) * 400) / 100
            + (153 * (m + CASE WHEN m > 2 THEN -3 ELSE 9 END) + 2) / 5 - 719468
        $$;

        -- SQLite's unixepoch(t): storage time text ('YYYY-MM-DD HH:MM:SS', every row netkeep
        -- writes) by arithmetic on its digits, in one expression PostgreSQL inlines into the count
        -- triggers' statements; any other text by netkeep_unixepoch_text.
        CREATE FUNCTION netkeep_unixepoch(t TEXT) RETURNS BIGINT
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
          SELECT CASE WHEN t ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$' THEN
            CASE WHEN substr(t, 6, 2)::int BETWEEN 1 AND 12 AND substr(t, 9, 2)::int BETWEEN 1 AND 31
              AND substr(t, 12, 2)::int <= 24 AND substr(t, 15, 2)::int <= 59 AND substr(t, 18, 2)::int <= 59
            THEN (netkeep_month_days(substr(t, 1, 4)::bigint, substr(t, 6, 2)::bigint) + substr(t, 9, 2)::bigint - 1) * 86400
              + substr(t, 12, 2)::bigint * 3600 + substr(t, 15, 2)::bigint * 60 + substr(t, 18, 2)::bigint
            END
          ELSE netkeep_unixepoch_text(t) END
        $$;

        -- The rows a statement changed, each with +1 (new) or -1 (old), as SQL over the trigger's
        -- transition tables.
        CREATE FUNCTION netkeep_changed_rows(op TEXT) RETURNS TEXT
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
          SELECT CASE op
            WHEN 'INSERT' THEN 'SELECT 1::bigint AS sign, n.* FROM new_rows AS n'
            WHEN 'DELETE' THEN 'SELECT -1::bigint AS sign, o.* FROM old_rows AS o'
            ELSE 'SELECT -1::bigint AS sign, o.* FROM old_rows AS o UNION ALL SELECT 1::bigint, n.* FROM new_rows AS n'
          END
        $$;

        -- The Events count triggers: every event but Connected and Disconnected counts; a
        -- non-canonical time is counted as irregular and left out of the buckets.
        CREATE FUNCTION netkeep_events_counts() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          EXECUTE format($sql$
            WITH r AS (%s)
            INSERT INTO "DeviceHistoryTotals" AS t ("mac", "events", "downAlerts", "irregular")
              SELECT r."eve_MAC", sum(r.sign)::bigint,
                sum(r.sign * (r."eve_EventType" = 'Device Down')::int)::bigint,
                sum(r.sign * (NOT netkeep_canonical_time(r."eve_DateTime"))::int)::bigint
              FROM r WHERE r."eve_EventType" NOT IN ('Connected', 'Disconnected')
              GROUP BY r."eve_MAC"
            ON CONFLICT ("mac") DO UPDATE SET "events" = t."events" + excluded."events",
              "downAlerts" = t."downAlerts" + excluded."downAlerts", "irregular" = t."irregular" + excluded."irregular"
          $sql$, netkeep_changed_rows(TG_OP));
          EXECUTE format($sql$
            WITH r AS (%s)
            INSERT INTO "DeviceHistoryBuckets" AS b ("mac", "span", "bucket", "events", "downAlerts")
              SELECT r."eve_MAC", v.span, substr(r."eve_DateTime", 1, v.span), sum(r.sign)::bigint,
                sum(r.sign * (r."eve_EventType" = 'Device Down')::int)::bigint
              FROM r, (VALUES (10), (7)) AS v (span)
              WHERE r."eve_EventType" NOT IN ('Connected', 'Disconnected') AND netkeep_canonical_time(r."eve_DateTime")
              GROUP BY 1, 2, 3
            ON CONFLICT ("mac", "span", "bucket") DO UPDATE SET "events" = b."events" + excluded."events",
              "downAlerts" = b."downAlerts" + excluded."downAlerts"
          $sql$, netkeep_changed_rows(TG_OP));
          RETURN NULL;
        END $$;
        CREATE TRIGGER "Events_counts_insert" AFTER INSERT ON "Events"
          REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION netkeep_events_counts();
        CREATE TRIGGER "Events_counts_delete" AFTER DELETE ON "Events"
          REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION netkeep_events_counts();
        CREATE TRIGGER "Events_counts_update" AFTER UPDATE ON "Events"
          REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION netkeep_events_counts();

        -- The Sessions count triggers: a session counts when open or ended; a closed session
        -- counts its seconds, and goes into the buckets (by the times it ended and started) when
        -- both times are canonical and in order, else it is irregular.
        CREATE FUNCTION netkeep_sessions_counts() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          EXECUTE format($sql$
            WITH r AS (%s),
            s AS (
              SELECT r.sign, r."ses_MAC" AS mac, r."ses_DateTimeConnection" AS conn, r."ses_DateTimeDisconnection" AS disc,
                (r."ses_DateTimeDisconnection" IS NULL OR r."ses_StillConnected" = 1) AS open
              FROM r),
            f AS (
              SELECT s.*, (s.open OR s.disc > '') AS counted,
                (NOT s.open AND s.conn IS NOT NULL AND netkeep_canonical_time(s.conn)
                  AND netkeep_canonical_time(s.disc) AND s.conn <= s.disc) AS regular
              FROM s)
            INSERT INTO "DeviceHistoryTotals" AS t ("mac", "sessions", "closedSeconds", "irregular")
              SELECT f.mac, sum(f.sign * f.counted::int)::bigint,
                sum(f.sign * CASE WHEN f.open OR NOT f.counted THEN 0
                  ELSE coalesce(greatest(0, netkeep_unixepoch(f.disc) - netkeep_unixepoch(f.conn)), 0) END)::bigint,
                sum(f.sign * (NOT f.open AND NOT f.regular)::int)::bigint
              FROM f GROUP BY f.mac
            ON CONFLICT ("mac") DO UPDATE SET "sessions" = t."sessions" + excluded."sessions",
              "closedSeconds" = t."closedSeconds" + excluded."closedSeconds", "irregular" = t."irregular" + excluded."irregular"
          $sql$, netkeep_changed_rows(TG_OP));
          EXECUTE format($sql$
            WITH r AS (%s),
            -- Materialized: each session's two times are read once, not once per bucket row.
            f AS MATERIALIZED (
              SELECT r.sign, r."ses_MAC" AS mac, r."ses_DateTimeConnection" AS conn, r."ses_DateTimeDisconnection" AS disc,
                netkeep_unixepoch(r."ses_DateTimeConnection") AS conn_s, netkeep_unixepoch(r."ses_DateTimeDisconnection") AS disc_s
              FROM r
              WHERE NOT (r."ses_DateTimeDisconnection" IS NULL OR r."ses_StillConnected" = 1)
                AND r."ses_DateTimeConnection" IS NOT NULL
                AND netkeep_canonical_time(r."ses_DateTimeConnection") AND netkeep_canonical_time(r."ses_DateTimeDisconnection")
                AND r."ses_DateTimeConnection" <= r."ses_DateTimeDisconnection")
            INSERT INTO "DeviceHistoryBuckets" AS b ("mac", "span", "bucket", "ended", "endedSum", "started", "startedSum")
              SELECT f.mac, v.span, substr(CASE v.which WHEN 0 THEN f.disc ELSE f.conn END, 1, v.span),
                sum(f.sign * (v.which = 0)::int)::bigint,
                sum(f.sign * (v.which = 0)::int * f.disc_s)::bigint,
                sum(f.sign * (v.which = 1)::int)::bigint,
                sum(f.sign * (v.which = 1)::int * f.conn_s)::bigint
              FROM f, (VALUES (10, 0), (7, 0), (10, 1), (7, 1)) AS v (span, which)
              GROUP BY 1, 2, 3
            ON CONFLICT ("mac", "span", "bucket") DO UPDATE SET "ended" = b."ended" + excluded."ended",
              "endedSum" = b."endedSum" + excluded."endedSum", "started" = b."started" + excluded."started",
              "startedSum" = b."startedSum" + excluded."startedSum"
          $sql$, netkeep_changed_rows(TG_OP));
          RETURN NULL;
        END $$;
        CREATE TRIGGER "Sessions_counts_insert" AFTER INSERT ON "Sessions"
          REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION netkeep_sessions_counts();
        CREATE TRIGGER "Sessions_counts_delete" AFTER DELETE ON "Sessions"
          REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION netkeep_sessions_counts();
        CREATE TRIGGER "Sessions_counts_update" AFTER UPDATE ON "Sessions"
          REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION netkeep_sessions_counts();
    `,
  },
  {
    description:
      "SQLite's version 11: Probes (a hub's remote scanners, token stored as a SHA-256 hash), ProbeCycles (the cycleIds applied per probe) and Devices_site",
    sqliteVersion: 11,
    sql: `
        CREATE TABLE "Probes" (
          "prb_Id" TEXT COLLATE "C" PRIMARY KEY NOT NULL,
          "prb_Name" TEXT COLLATE "C" NOT NULL UNIQUE,
          "prb_Site" TEXT COLLATE "C" NOT NULL,
          "prb_TokenHash" BYTEA NOT NULL,
          "prb_CreatedAt" TEXT COLLATE "C" NOT NULL,
          "prb_Subnets" TEXT COLLATE "C" NOT NULL DEFAULT '[]',
          "prb_LastCycleAt" TEXT COLLATE "C",
          "prb_LastCycleStartedAt" TEXT COLLATE "C",
          "prb_Status" TEXT COLLATE "C" NOT NULL DEFAULT 'never' CHECK ("prb_Status" IN ('never', 'online', 'offline')),
          "prb_SpooledCycles" BIGINT NOT NULL DEFAULT 0,
          "prb_DroppedCycles" BIGINT NOT NULL DEFAULT 0
        );
        CREATE TABLE "ProbeCycles" (
          "pcy_ProbeId" TEXT COLLATE "C" NOT NULL REFERENCES "Probes" ("prb_Id") ON DELETE CASCADE,
          "pcy_CycleId" TEXT COLLATE "C" NOT NULL,
          "pcy_AppliedAt" TEXT COLLATE "C" NOT NULL,
          PRIMARY KEY ("pcy_ProbeId", "pcy_CycleId")
        );
        CREATE INDEX "ProbeCycles_applied" ON "ProbeCycles" ("pcy_ProbeId", "pcy_AppliedAt");
        CREATE INDEX "Devices_site" ON "Devices" ("devSite");
    `,
  },
  {
    description:
      'Change tracking for the caches of every server: which devices each statement changed, kept for the COMMIT of the writing server and sent to the others by NOTIFY (no SQLite change: its tracking is TEMP triggers)',
    sqliteVersion: 11,
    sql: `
        -- The devices whose answers a statement changed (SQLite's TEMP change-tracking triggers,
        -- device-sql.ts, mark the same rows; a parent is marked whenever a child row changes, a
        -- little more than SQLite's column check). Two uses: the writing server reads them before
        -- COMMIT from the transaction-local setting netkeep.changed (pool.ts), and every other
        -- server hears them through one NOTIFY per statement on netkeep_changes, which PostgreSQL
        -- delivers at COMMIT and drops on ROLLBACK (notify.ts reads the envelope; a payload over
        -- 7800 bytes becomes an overflow: everything may have changed). netkeep.server is the
        -- writing server's id (its connections set it), so that a server ignores its own.
        CREATE FUNCTION netkeep_note_changes() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
          macs TEXT[];
          payload TEXT;
          server TEXT := coalesce(current_setting('netkeep.server', true), '');
        BEGIN
          EXECUTE 'SELECT array_agg(DISTINCT m) FROM (' || TG_ARGV[0] || ') AS c (m) WHERE m <> '''''
            INTO macs;
          IF macs IS NULL THEN
            RETURN NULL;
          END IF;
          PERFORM set_config('netkeep.changed',
            coalesce(current_setting('netkeep.changed', true), '') || array_to_string(macs, chr(10)) || chr(10), true);
          payload := json_build_object('from', server, 'body', json_build_object('macs', macs))::text;
          IF octet_length(payload) > 7800 THEN
            payload := json_build_object('from', server, 'overflow', true)::text;
          END IF;
          PERFORM pg_notify('netkeep_changes', payload);
          RETURN NULL;
        END $$;
        CREATE TRIGGER "netkeep_changes_insert" AFTER INSERT ON "Devices" REFERENCING NEW TABLE AS new_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_changes('SELECT "devMac" FROM new_rows UNION ALL SELECT "devParentMAC" FROM new_rows');
        CREATE TRIGGER "netkeep_changes_delete" AFTER DELETE ON "Devices" REFERENCING OLD TABLE AS old_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_changes('SELECT "devMac" FROM old_rows UNION ALL SELECT "devParentMAC" FROM old_rows');
        CREATE TRIGGER "netkeep_changes_update" AFTER UPDATE ON "Devices" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_changes('SELECT "devMac" FROM new_rows UNION ALL SELECT "devMac" FROM old_rows UNION ALL SELECT "devParentMAC" FROM new_rows UNION ALL SELECT "devParentMAC" FROM old_rows');
        CREATE TRIGGER "netkeep_changes_insert" AFTER INSERT ON "DeviceMacs" REFERENCING NEW TABLE AS new_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_changes('SELECT "dma_DevMac" FROM new_rows');
        CREATE TRIGGER "netkeep_changes_delete" AFTER DELETE ON "DeviceMacs" REFERENCING OLD TABLE AS old_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_changes('SELECT "dma_DevMac" FROM old_rows');
        CREATE TRIGGER "netkeep_changes_update" AFTER UPDATE ON "DeviceMacs" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_changes('SELECT "dma_DevMac" FROM new_rows UNION ALL SELECT "dma_DevMac" FROM old_rows');
        CREATE TRIGGER "netkeep_changes_insert" AFTER INSERT ON "Events" REFERENCING NEW TABLE AS new_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_changes('SELECT "eve_MAC" FROM new_rows');
        CREATE TRIGGER "netkeep_changes_delete" AFTER DELETE ON "Events" REFERENCING OLD TABLE AS old_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_changes('SELECT "eve_MAC" FROM old_rows');
        CREATE TRIGGER "netkeep_changes_update" AFTER UPDATE ON "Events" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_changes('SELECT "eve_MAC" FROM new_rows UNION ALL SELECT "eve_MAC" FROM old_rows');
        CREATE TRIGGER "netkeep_changes_insert" AFTER INSERT ON "Sessions" REFERENCING NEW TABLE AS new_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_changes('SELECT "ses_MAC" FROM new_rows');
        CREATE TRIGGER "netkeep_changes_delete" AFTER DELETE ON "Sessions" REFERENCING OLD TABLE AS old_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_changes('SELECT "ses_MAC" FROM old_rows');
        CREATE TRIGGER "netkeep_changes_update" AFTER UPDATE ON "Sessions" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_changes('SELECT "ses_MAC" FROM new_rows UNION ALL SELECT "ses_MAC" FROM old_rows');
        CREATE TRIGGER "netkeep_changes_insert" AFTER INSERT ON "ScanState" REFERENCING NEW TABLE AS new_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_changes('SELECT "mac" FROM new_rows');
        CREATE TRIGGER "netkeep_changes_delete" AFTER DELETE ON "ScanState" REFERENCING OLD TABLE AS old_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_changes('SELECT "mac" FROM old_rows');
        CREATE TRIGGER "netkeep_changes_update" AFTER UPDATE ON "ScanState" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_changes('SELECT "mac" FROM new_rows UNION ALL SELECT "mac" FROM old_rows');
    `,
  },
  {
    description:
      'The change log: the change triggers append the devices each statement changed to netkeep_change_log (kept or rolled back with the write) instead of a NOTIFY per statement, which serialised the commits of every server (no SQLite change)',
    sqliteVersion: 11,
    sql: `
        -- One row per writing statement: the devices it changed, the writing server, and the
        -- writing transaction's id, by which the other servers read the rows committed since
        -- their last read (change-log.ts: a row they have not seen has an xid at or above the
        -- xmin of their previous snapshot). A server sends a NOTIFY hint after its commits,
        -- coalesced and off the write path; the others also read on a short timer, so a lost
        -- hint delays a change by that period at most. Rows are pruned once every server has had
        -- time to read them.
        CREATE TABLE netkeep_change_log (
          id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          xid XID8 NOT NULL DEFAULT pg_current_xact_id(),
          server TEXT COLLATE "C" NOT NULL,
          macs TEXT[] NOT NULL
        );
        CREATE INDEX netkeep_change_log_xid ON netkeep_change_log (xid);
        CREATE OR REPLACE FUNCTION netkeep_note_changes() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
          macs TEXT[];
        BEGIN
          EXECUTE 'SELECT array_agg(DISTINCT m) FROM (' || TG_ARGV[0] || ') AS c (m) WHERE m <> '''''
            INTO macs;
          IF macs IS NULL THEN
            RETURN NULL;
          END IF;
          PERFORM set_config('netkeep.changed',
            coalesce(current_setting('netkeep.changed', true), '') || array_to_string(macs, chr(10)) || chr(10), true);
          INSERT INTO netkeep_change_log (server, macs)
            VALUES (coalesce(current_setting('netkeep.server', true), ''), macs);
          RETURN NULL;
        END $$;
    `,
  },
  {
    description:
      "SQLite's version 12, its change log (netkeep_change_log and its triggers): no PostgreSQL change, PostgreSQL has had its own change log since migration 4",
    sqliteVersion: 12,
    // Nothing to run: a comment alone is an empty query, which PostgreSQL accepts.
    sql: '-- no change',
  },
  {
    description:
      "A device only seen again: a Devices UPDATE that moved devLastConnection alone is noted with its new value (netkeep.seen, the change log's column seen), so that the caches keep the answer and put the value in, as on SQLite since its version 12 (no SQLite change)",
    sqliteVersion: 12,
    sql: `
        -- A row whose only change is devLastConnection (a scan cycle's device seen again) goes
        -- into a JSON object, MAC -> new value: in the transaction-local setting netkeep.seen
        -- (pool.ts reads it before COMMIT, with netkeep.changed) and in the log row's column
        -- seen. Every other updated row marks its device, its former MAC and both parents, as
        -- before. A MAC marked both ways in one transaction counts as changed (the readers).
        -- The Devices columns are those of this version, listed literally (frozen:
        -- devicesColumnsV11, as SQLite's version 12 lists them; a comparison of whole rows as
        -- JSON doubled a scan cycle's apply): a later migration that adds a column must replace netkeep_note_device_updates
        -- with it (test/store/postgres/change-tracking.test.ts checks the list against the table).
        ALTER TABLE netkeep_change_log ADD COLUMN seen JSONB;
        CREATE FUNCTION netkeep_note_device_updates() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
          seen JSONB;
          macs TEXT[];
        BEGIN
          SELECT jsonb_object_agg(n."devMac", n."devLastConnection") INTO seen
            FROM new_rows n JOIN old_rows o ON o."devMac" = n."devMac"
            WHERE n."devLastConnection" IS DISTINCT FROM o."devLastConnection"
              AND ${sameButLastConnectionV11};
          SELECT array_agg(DISTINCT m) INTO macs FROM (
              SELECT unnest(ARRAY[r."devMac", r."devParentMAC"])
                FROM (SELECT * FROM new_rows UNION ALL SELECT * FROM old_rows) AS r
                WHERE seen IS NULL OR NOT seen ? r."devMac"
            ) AS c (m) WHERE m <> '';
          IF macs IS NULL AND seen IS NULL THEN
            RETURN NULL;
          END IF;
          IF macs IS NOT NULL THEN
            PERFORM set_config('netkeep.changed',
              coalesce(current_setting('netkeep.changed', true), '') || array_to_string(macs, chr(10)) || chr(10), true);
          END IF;
          IF seen IS NOT NULL THEN
            PERFORM set_config('netkeep.seen',
              (coalesce(nullif(current_setting('netkeep.seen', true), ''), '{}')::jsonb || seen)::text, true);
          END IF;
          INSERT INTO netkeep_change_log (server, macs, seen)
            VALUES (coalesce(current_setting('netkeep.server', true), ''), coalesce(macs, '{}'), seen);
          RETURN NULL;
        END $$;
        DROP TRIGGER "netkeep_changes_update" ON "Devices";
        CREATE TRIGGER "netkeep_changes_update" AFTER UPDATE ON "Devices" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
          FOR EACH STATEMENT EXECUTE FUNCTION netkeep_note_device_updates();
    `,
  },
  {
    description:
      "SQLite's version 13, its change log's Devices update trigger split in four (cheaper to fire, the same rows): no PostgreSQL change",
    sqliteVersion: 13,
    sql: '-- no change',
  },
  {
    description:
      "SQLite's version 14, its change log held while a scan cycle appends each device once: no PostgreSQL change (its log triggers append a row per statement already)",
    sqliteVersion: 14,
    sql: '-- no change',
  },
];

/** The number of PostgreSQL migrations applied to the database (0 for a new database). */
export async function postgresSchemaVersion(client: PoolClient): Promise<number> {
  const { rows } = await client.query<{ version: number | null }>(
    `SELECT CASE WHEN to_regclass('netkeep_migrations') IS NULL THEN 0
       ELSE (SELECT coalesce(max(version), 0) FROM netkeep_migrations) END AS version`,
  );
  return rows[0]?.version ?? 0;
}

/**
 * Applies every migration the database lacks, each in its own transaction under the advisory
 * lock (a server that waited finds the work done). Returns how many ran.
 */
export async function migratePostgres(client: PoolClient): Promise<number> {
  let ran = 0;
  for (;;) {
    await client.query('BEGIN');
    try {
      await client.query("SELECT pg_advisory_xact_lock(hashtext('netkeep migrations'))");
      await client.query(`CREATE TABLE IF NOT EXISTS netkeep_migrations (
        version INTEGER PRIMARY KEY,
        description TEXT NOT NULL,
        applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
      )`);
      const version = await postgresSchemaVersion(client);
      if (version > postgresMigrations.length) {
        throw new Error(
          `database schema version ${version} is newer than this netkeep (${postgresMigrations.length})`,
        );
      }
      const migration = postgresMigrations[version];
      if (migration === undefined) {
        await client.query('COMMIT');
        return ran;
      }
      await client.query(migration.sql);
      await client.query('INSERT INTO netkeep_migrations (version, description) VALUES ($1, $2)', [
        version + 1,
        migration.description,
      ]);
      await client.query('COMMIT');
      ran++;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }
}

/**
 * Every SQL text the SQLite device store runs, in one place. Exported so that a test can check with
 * EXPLAIN QUERY PLAN that each per-device statement is an index lookup, and so that the property
 * test can recount from the raw tables with the statements that define the counts.
 *
 * Times are compared as storage text `YYYY-MM-DD HH:MM:SS` (sortable); `@start` is '' for period
 * `all`: every stored time sorts after it.
 */
import { editableFields, storedFields } from './catalogue.js';
import { eventColumns, sessionColumns } from './history.js';
import { deviceListSql, type DeviceListQuery } from './list-query.js';

const editableNames = editableFields.map((f) => f.name);
const columnList = storedFields.map((f) => f.name).join(', ');
const copiedColumns = storedFields
  .filter((f) => f.name !== 'devMac' && f.name !== 'devGUID')
  .map((f) => f.name);

/**
 * The period rules, shared by the counts of GET /device and the history lists so that both always
 * select the same rows. `@start` is '' for `all`: every stored time sorts after it. A session
 * overlaps the period when it is open (no disconnection time, or flagged still connected) or ended
 * after the period start.
 */
const eventInPeriod = 'eve_MAC = @mac AND eve_DateTime >= @start';
/** A session is open while it has no disconnection time or is flagged still connected. */
const sessionOpen = '(ses_DateTimeDisconnection IS NULL OR ses_StillConnected = 1)';
const sessionInPeriod = `ses_MAC = @mac AND (${sessionOpen} OR ses_DateTimeDisconnection > @start)`;

/**
 * The update of one field (update-column, or a POST that changes one field): it touches only that
 * column's index entries. `name` must be an editable catalogue field; nothing else is accepted.
 */
export function updateOneSql(name: string): string {
  if (!editableNames.includes(name)) throw new RangeError(`'${name}' is not an editable device field`);
  return `UPDATE Devices SET ${name} = @value WHERE devMac = @mac`;
}

/**
 * Every SQL text the repository runs, exported so that a test can check with EXPLAIN QUERY PLAN
 * that each per-device query is an index lookup.
 */
export const deviceSql = {
  select: `SELECT ${columnList} FROM Devices WHERE devMac = ?`,
  exists: 'SELECT 1 FROM Devices WHERE devMac = ?',
  insert: `INSERT INTO Devices (${columnList}) VALUES (${storedFields.map((f) => `@${f.name}`).join(', ')})`,
  // One statement for every partial update of several fields: `@set_<name>` is 1 for the fields
  // given. Preparing one statement per combination of fields would not be "once". It rewrites
  // every column and so every index entry of the row: about five times the cost of `updateOneSql`.
  update: `UPDATE Devices SET ${editableNames
    .map((n) => `${n} = CASE WHEN @set_${n} THEN @${n} ELSE ${n} END`)
    .join(', ')} WHERE devMac = @mac`,
  delete: 'DELETE FROM Devices WHERE devMac = ?',
  deleteEvents: 'DELETE FROM Events WHERE eve_MAC = ?',
  deleteSessions: 'DELETE FROM Sessions WHERE ses_MAC = ?',
  // The scanner's memory of a MAC (misses in the grace window, how its last absence was
  // recorded: migration 2). It describes the history and presence flags that delete, events/delete
  // and copy replace, so those drop it in the same transaction; the scanner then starts that MAC
  // afresh (misses 0; a reappearance is Connected, not Down Reconnected).
  deleteScanState: 'DELETE FROM ScanState WHERE mac = ?',
  orphanChildren: "UPDATE Devices SET devParentMAC = '' WHERE devParentMAC = ?",
  // Whether @child is @parent or one of its ancestors (walking devParentMAC up from @parent): then
  // @parent under @child would close a loop. UNION (not ALL) ends the walk on a loop already stored.
  parentCycle: `WITH RECURSIVE up(mac) AS (
      SELECT @parent UNION SELECT d.devParentMAC FROM Devices d JOIN up ON d.devMac = up.mac WHERE d.devParentMAC != '')
    SELECT 1 FROM up WHERE mac = @child LIMIT 1`,
  resetProps: 'UPDATE Devices SET devCustomProps = ? WHERE devMac = ?',
  // One statement: the SELECT finds nothing when the source is missing, so the target is untouched.
  copy: `INSERT INTO Devices (devMac, ${copiedColumns.join(', ')}, devGUID)
    SELECT @to, ${copiedColumns.join(', ')}, @guid FROM Devices WHERE devMac = @from
    ON CONFLICT (devMac) DO UPDATE SET ${[...copiedColumns, 'devGUID'].map((n) => `${n} = excluded.${n}`).join(', ')}`,
  children: `SELECT devMac, devName, devPresentLastScan, devAlertDown, devParentRelType, devParentPort, devLastIP
    FROM Devices WHERE devParentMAC = ? ORDER BY devMac`,
  eventCounts: `SELECT
      COUNT(*) FILTER (WHERE eve_EventType NOT IN ('Connected', 'Disconnected')) AS events,
      COUNT(*) FILTER (WHERE eve_EventType = 'Device Down') AS downAlerts
    FROM Events WHERE ${eventInPeriod}`,
  // An open session ends "now". Its start is clipped to the period start. A session with no connection time counts
  // but adds no hours (MAX with NULL is NULL, which SUM skips): its length is unknown.
  // openSessions / latestOpenStart let the view cache advance the hours without a query: each open
  // session that started before `now` adds exactly one second per second.
  sessionStats: `SELECT COUNT(*) AS sessions,
      TOTAL(MAX(0, unixepoch(CASE WHEN ${sessionOpen} THEN @now ELSE ses_DateTimeDisconnection END)
                   - unixepoch(MAX(ses_DateTimeConnection, @start)))) AS seconds,
      COUNT(ses_DateTimeConnection) FILTER (WHERE ${sessionOpen}) AS openSessions,
      MAX(ses_DateTimeConnection) FILTER (WHERE ${sessionOpen}) AS latestOpenStart
    FROM Sessions WHERE ${sessionInPeriod}`,
  // Newest first in the order of Events_mac_time (time, then type, then rowid, all descending), so
  // a page is a backward walk of the index with no sort; ties within one second are thus ordered
  // by type, then by insertion.
  eventsPage: `SELECT ${eventColumns.join(', ')} FROM Events WHERE ${eventInPeriod}
    ORDER BY eve_DateTime DESC, eve_EventType DESC, rowid DESC LIMIT @limit OFFSET @offset`,
  eventsTotal: `SELECT COUNT(*) FROM Events WHERE ${eventInPeriod}`,
  // Newest connection first in the order of Sessions_mac_connection (a session with no recorded
  // connection time sorts last).
  sessionsPage: `SELECT ${sessionColumns.join(', ')} FROM Sessions INDEXED BY Sessions_mac_connection
    WHERE ${sessionInPeriod}
    ORDER BY ses_DateTimeConnection DESC, rowid DESC LIMIT @limit OFFSET @offset`,
  sessionsTotal: `SELECT COUNT(*) FROM Sessions WHERE ${sessionInPeriod}`,
} as const;

/** GET /devices: the SQL of one list shape (list-query.ts) over the stored columns. */
export function deviceListStatements(query: DeviceListQuery): { page: string; total: string; order: string } {
  return deviceListSql(query, columnList);
}

/**
 * The per-device counts without the recount: the migration keeps `DeviceHistoryTotals` (all time)
 * and `DeviceHistoryBuckets` (per day and per month) up to date with triggers on Events and
 * Sessions, whoever writes them. A period's counts are then the buckets from the day after its
 * start on (days to the end of that month, then whole months: at most ~43 rows) plus the raw rows
 * between the start and that day (one day's worth at most), plus the open sessions.
 */
export const countSql = {
  totals: `SELECT events, downAlerts, sessions, closedSeconds, irregular
    FROM DeviceHistoryTotals WHERE mac = ?`,
  // Open sessions count in every period and end "now"; a start before the period is clipped to it.
  // `growing` open sessions add a second per second; `nextStart` is when a future one starts to;
  // `irregular` ones (a start that is not canonical storage text) keep a cache from relying on that.
  openSessions: `SELECT COUNT(*) AS sessions,
      TOTAL(MAX(0, unixepoch(@now) - unixepoch(MAX(ses_DateTimeConnection, @start)))) AS seconds,
      COUNT(*) FILTER (WHERE ses_DateTimeConnection >= @start AND ses_DateTimeConnection <= @now) AS growing,
      MIN(ses_DateTimeConnection) FILTER (WHERE ses_DateTimeConnection > @now) AS nextStart,
      COUNT(*) FILTER (WHERE ses_DateTimeConnection IS NOT NULL
        AND datetime(ses_DateTimeConnection) IS NOT ses_DateTimeConnection) AS irregular
    FROM Sessions WHERE ses_MAC = @mac AND ${sessionOpen}`,
  // The earliest row time at or after a period's start: when the start passes it, a count (or the
  // rate at which presence changes) changes.
  nextChange: `SELECT
      (SELECT eve_DateTime FROM Events WHERE eve_MAC = @mac AND eve_DateTime >= @start
         AND eve_EventType NOT IN ('Connected', 'Disconnected') ORDER BY eve_DateTime LIMIT 1) AS event,
      (SELECT ses_DateTimeDisconnection FROM Sessions WHERE ses_MAC = @mac
         AND ses_DateTimeDisconnection > @start AND NOT ${sessionOpen}
         ORDER BY ses_DateTimeDisconnection LIMIT 1) AS ended,
      (SELECT ses_DateTimeConnection FROM Sessions INDEXED BY Sessions_mac_connection
         WHERE ses_MAC = @mac AND ses_DateTimeConnection >= @start
         ORDER BY ses_DateTimeConnection LIMIT 1) AS started`,
  buckets: `SELECT TOTAL(events) AS events, TOTAL(downAlerts) AS downAlerts,
      TOTAL(ended) AS ended, TOTAL(endedSum) AS endedSum,
      TOTAL(started) AS started, TOTAL(startedSum) AS startedSum
    FROM (
      SELECT events, downAlerts, ended, endedSum, started, startedSum FROM DeviceHistoryBuckets
        WHERE mac = @mac AND span = 10 AND bucket >= @dayFrom AND bucket < @dayTo
      UNION ALL
      SELECT events, downAlerts, ended, endedSum, started, startedSum FROM DeviceHistoryBuckets
        WHERE mac = @mac AND span = 7 AND bucket >= @monthFrom)`,
  edgeEvents: `SELECT
      COUNT(*) FILTER (WHERE eve_EventType NOT IN ('Connected', 'Disconnected')) AS events,
      COUNT(*) FILTER (WHERE eve_EventType = 'Device Down') AS downAlerts
    FROM Events WHERE eve_MAC = @mac AND eve_DateTime >= @start AND eve_DateTime < @dayFrom`,
  // Closed sessions that end after the start, on the start's day.
  edgeEnded: `SELECT COUNT(*) AS n, TOTAL(unixepoch(ses_DateTimeDisconnection)) AS sum
    FROM Sessions WHERE ses_MAC = @mac AND ses_DateTimeDisconnection > @start
      AND ses_DateTimeDisconnection < @dayFrom AND NOT ${sessionOpen}`,
  // Closed sessions that start at or after the start, on the start's day, and end after it.
  edgeStarted: `SELECT COUNT(*) AS n, TOTAL(unixepoch(ses_DateTimeConnection)) AS sum
    FROM Sessions INDEXED BY Sessions_mac_connection
    WHERE ses_MAC = @mac AND ses_DateTimeConnection >= @start AND ses_DateTimeConnection < @dayFrom
      AND ses_DateTimeDisconnection > @start AND NOT ${sessionOpen}`,
} as const;

/** What the presence scanner reads and writes (Devices presence fields, history, its memory). */
export const presenceSql = {
  load: `
    SELECT d.devMac, d.devPresentLastScan, d.devAlertDown, d.devAlertEvents, d.devScan,
           d.devIsArchived, d.devLastIP, d.devVendor,
           COALESCE(s.misses, 0) AS misses, s.lastAbsence
    FROM Devices d LEFT JOIN ScanState s ON s.mac = d.devMac`,
  updatePresence: `
    UPDATE Devices SET devPresentLastScan = ?, devLastIP = ?,
      devLastConnection = COALESCE(?, devLastConnection), devVendor = COALESCE(?, devVendor)
    WHERE devMac = ?`,
  insertEvent: `
    INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType, eve_AdditionalInfo,
                        eve_PendingAlertEmail, eve_PairEventRowid)
    VALUES (?, ?, ?, ?, ?, ?, NULL)`,
  openSession: `
    INSERT INTO Sessions (ses_MAC, ses_IP, ses_EventTypeConnection, ses_DateTimeConnection,
                          ses_EventTypeDisconnection, ses_DateTimeDisconnection,
                          ses_StillConnected, ses_AdditionalInfo)
    VALUES (?, ?, ?, ?, '', NULL, 1, '')`,
  closeSession: `
    UPDATE Sessions INDEXED BY Sessions_open
    SET ses_EventTypeDisconnection = ?, ses_DateTimeDisconnection = ?, ses_StillConnected = 0
    WHERE ses_MAC = ? AND ses_StillConnected = 1`,
  upsertScanState: `
    INSERT INTO ScanState (mac, misses, lastAbsence) VALUES (?, ?, ?)
    ON CONFLICT (mac) DO UPDATE SET misses = excluded.misses, lastAbsence = excluded.lastAbsence`,
  // rowid batches picked through the time indexes (Events_time, Sessions_disconnection).
  pruneEvents: `
    DELETE FROM Events WHERE rowid IN (
      SELECT rowid FROM Events WHERE eve_DateTime < ? LIMIT ?)`,
  pruneSessions: `
    DELETE FROM Sessions WHERE rowid IN (
      SELECT rowid FROM Sessions
      WHERE ses_DateTimeDisconnection < ? AND ses_StillConnected = 0 LIMIT ?)`,
  pruneScanState:
    'DELETE FROM ScanState WHERE NOT EXISTS (SELECT 1 FROM Devices WHERE devMac = ScanState.mac)',
} as const;

/**
 * Which devices' answers a write on this connection changed, reported by TEMP triggers (they fire
 * for this connection only, whoever on it writes: routes, the scanner, an import, the alerts hook)
 * to `changedDeviceFunction`, a function the store registers on the connection: the store learns of
 * each change as it is made, without a table to read back. A device's answer shows its own row and
 * history, and its children's name, status, relation, port and IP, so a child's change also marks
 * its parent. A change that is rolled back stays marked, which only costs a cache entry. Commits by
 * other connections are noticed through `PRAGMA data_version` instead.
 */
export const changedDeviceFunction = 'netkeep_device_changed';
const mark = (value: string): string => `SELECT ${changedDeviceFunction}(${value})`;
export const changeTrackingSql = `
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_insert AFTER INSERT ON main.Devices BEGIN
    ${mark('mac')} FROM (SELECT NEW.devMac AS mac UNION ALL
      SELECT NEW.devParentMAC WHERE NEW.devParentMAC != '');
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_delete AFTER DELETE ON main.Devices BEGIN
    ${mark('mac')} FROM (SELECT OLD.devMac AS mac UNION ALL
      SELECT OLD.devParentMAC WHERE OLD.devParentMAC != '');
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_update AFTER UPDATE ON main.Devices BEGIN
    ${mark('mac')} FROM (SELECT NEW.devMac AS mac UNION ALL SELECT OLD.devMac
      UNION ALL SELECT parent FROM (SELECT OLD.devParentMAC AS parent UNION ALL SELECT NEW.devParentMAC)
      WHERE parent != '' AND (OLD.devParentMAC IS NOT NEW.devParentMAC OR OLD.devName IS NOT NEW.devName
        OR OLD.devPresentLastScan IS NOT NEW.devPresentLastScan OR OLD.devAlertDown IS NOT NEW.devAlertDown
        OR OLD.devParentRelType IS NOT NEW.devParentRelType OR OLD.devParentPort IS NOT NEW.devParentPort
        OR OLD.devLastIP IS NOT NEW.devLastIP OR OLD.devMac IS NOT NEW.devMac));
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_event_insert AFTER INSERT ON main.Events BEGIN
    ${mark('NEW.eve_MAC')};
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_event_delete AFTER DELETE ON main.Events BEGIN
    ${mark('OLD.eve_MAC')};
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_event_update AFTER UPDATE ON main.Events BEGIN
    ${mark('OLD.eve_MAC')}; ${mark('NEW.eve_MAC')};
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_session_insert AFTER INSERT ON main.Sessions BEGIN
    ${mark('NEW.ses_MAC')};
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_session_delete AFTER DELETE ON main.Sessions BEGIN
    ${mark('OLD.ses_MAC')};
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_session_update AFTER UPDATE ON main.Sessions BEGIN
    ${mark('OLD.ses_MAC')}; ${mark('NEW.ses_MAC')};
  END;`;

export const dataVersionSql = 'PRAGMA data_version';

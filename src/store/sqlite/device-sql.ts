/**
 * Every SQL text the SQLite device store runs, in one place. Exported so that a test can check with
 * EXPLAIN QUERY PLAN that each per-device statement is an index lookup, and so that the property
 * test can recount from the raw tables with the statements that define the counts.
 *
 * Times are compared as storage text `YYYY-MM-DD HH:MM:SS` (sortable); `@start` is '' for period
 * `all`: every stored time sorts after it.
 */
import { editableFields, storedFields } from '../../devices/catalogue.js';
import { eventColumns, sessionColumns } from '../../devices/history.js';
import { searchColumns, type DeviceListQuery } from '../../devices/list-query.js';
import { deviceListSql } from './list-sql.js';
import { toggleEventTypes } from '../../devices/presence.js';
import { presenceFlagColumns } from './status-sql.js';
import type { ChildRow } from './devices.js';

const editableNames = editableFields.map((f) => f.name);
const columnList = storedFields.map((f) => f.name).join(', ');
export const copiedColumns = storedFields
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
/** The searched columns of every device: the search index's load (one pass, no per-row work). */
export const searchTextsSql = `SELECT devMac, ${searchColumns.join(', ')} FROM Devices`;

/**
 * The fields of a child that its parent's answer shows (devChildrenDynamic), in that order: the
 * `children` query, PostgreSQL's (postgres/device-views.ts) and the change tracking's parent marks.
 */
export const childColumns = [
  'devMac',
  'devName',
  'devPresentLastScan',
  'devAlertDown',
  'devParentRelType',
  'devParentPort',
  'devLastIP',
] as const satisfies readonly (keyof ChildRow)[];

export const deviceSql = {
  select: `SELECT ${columnList}, ${presenceFlagColumns} FROM Devices WHERE devMac = ?`,
  // GET /device's row: `select`, and whether the device has aliases and children (most have
  // neither, and their two lookups are then skipped).
  view: `SELECT ${columnList}, ${presenceFlagColumns},
      EXISTS (SELECT 1 FROM DeviceMacs WHERE dma_DevMac = Devices.devMac) AS viewHasAliases,
      EXISTS (SELECT 1 FROM Devices AS child WHERE child.devParentMAC = Devices.devMac) AS viewHasChildren
    FROM Devices WHERE devMac = ?`,
  exists: 'SELECT 1 FROM Devices WHERE devMac = ?',
  // What the search index (search-index.ts) keeps of a device (`searchTextsSql`: of every one).
  searchTextsOf: `SELECT devMac, ${searchColumns.join(', ')} FROM Devices WHERE devMac = ?`,
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
  children: `SELECT ${childColumns.join(', ')} FROM Devices WHERE devParentMAC = ? ORDER BY devMac`,
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

/**
 * How a dialect writes the merge's rules: a column of the target row (`Devices`) and of the `from`
 * row (`f`), and its two-argument minimum and maximum. The PostgreSQL store writes the same rules
 * with its own (src/store/postgres/macs.ts), so both stores merge alike.
 */
export interface MergeDialect {
  readonly to: (name: string) => string;
  readonly from: (name: string) => string;
  readonly least: string;
  readonly greatest: string;
}

const sqliteMerge: MergeDialect = {
  to: (name) => `Devices.${name}`,
  from: (name) => `f.${name}`,
  least: 'MIN',
  greatest: 'MAX',
};

/**
 * "Empty" for a merge: the value a device has when nobody set it (the `from` device's value is
 * taken then). Flags and hours are never empty: the target's win.
 */
function emptySql(d: MergeDialect, name: string): string | undefined {
  const f = storedFields.find((field) => field.name === name);
  if (f === undefined) return undefined;
  if (name === 'devName') return `${d.to('devName')} IN ('', '(unknown)')`;
  switch (f.kind) {
    case 'text':
      return `${d.to(name)} = ''`;
    case 'time':
    case 'port':
      return `${d.to(name)} IS NULL`;
    case 'json':
      return `${d.to(name)} = '[]'`;
    default:
      return undefined;
  }
}

/** Fields a merge decides by what was observed rather than by "the target's non-empty wins". */
function observedOnMerge(d: MergeDialect): Readonly<Record<string, string>> {
  const { to: t, from: f } = d;
  return {
    devFirstConnection: `${d.least}(COALESCE(${t('devFirstConnection')}, ${f('devFirstConnection')}), COALESCE(${f('devFirstConnection')}, ${t('devFirstConnection')}))`,
    devLastConnection: `${d.greatest}(COALESCE(${t('devLastConnection')}, ${f('devLastConnection')}), COALESCE(${f('devLastConnection')}, ${t('devLastConnection')}))`,
    devPresentLastScan: `${d.greatest}(${t('devPresentLastScan')}, ${f('devPresentLastScan')})`,
    // The last IP of whichever MAC was seen last.
    devLastIP: `CASE WHEN ${t('devLastIP')} = '' OR COALESCE(${f('devLastConnection')}, '') > COALESCE(${t('devLastConnection')}, '')
    THEN CASE WHEN ${f('devLastIP')} = '' THEN ${t('devLastIP')} ELSE ${f('devLastIP')} END ELSE ${t('devLastIP')} END`,
    // The source follows the name it describes.
    devNameSource: `CASE WHEN ${t('devName')} IN ('', '(unknown)') THEN ${f('devNameSource')} ELSE ${t('devNameSource')} END`,
    // Never the target itself (from was its parent).
    devParentMAC: `CASE WHEN ${t('devParentMAC')} = '' AND ${f('devParentMAC')} != ${t('devMac')} THEN ${f('devParentMAC')} ELSE ${t('devParentMAC')} END`,
  };
}

/** Each stored field a merge sets (all but devMac and devGUID) and its new value, in `d`'s SQL. */
export function mergedColumns(d: MergeDialect): (readonly [string, string])[] {
  const observed = observedOnMerge(d);
  return storedFields
    .filter((f) => f.name !== 'devMac' && f.name !== 'devGUID')
    .map((f) => {
      const rule = observed[f.name];
      if (rule !== undefined) return [f.name, rule] as const;
      const empty = emptySql(d, f.name);
      return [
        f.name,
        empty === undefined
          ? undefined
          : `CASE WHEN ${empty} THEN ${d.from(f.name)} ELSE ${d.to(f.name)} END`,
      ] as const;
    })
    .filter((entry): entry is readonly [string, string] => entry[1] !== undefined);
}

/**
 * Several MACs per device: DeviceMacs holds a device's other MACs (aliases); its own MAC is its
 * devMac and is never in the table (triggers of the migration refuse a MAC that is both). Every
 * statement over the table is here, run by the device store only.
 */
export const macSql = {
  resolve: 'SELECT dma_DevMac FROM DeviceMacs WHERE dma_MAC = ?',
  aliases: 'SELECT dma_MAC FROM DeviceMacs WHERE dma_DevMac = ? ORDER BY dma_MAC',
  loadAliases: 'SELECT dma_MAC AS alias, dma_DevMac AS devMac FROM DeviceMacs',
  insert: `INSERT INTO DeviceMacs (dma_MAC, dma_DevMac, dma_FirstSeen, dma_LastSeen, dma_Reason)
    VALUES (@mac, @devMac, @firstSeen, @lastSeen, @reason)`,
  seen: 'UPDATE DeviceMacs SET dma_LastSeen = ? WHERE dma_MAC = ?',
  deleteOf: 'DELETE FROM DeviceMacs WHERE dma_DevMac = ?',
  deleteAlias:
    'DELETE FROM DeviceMacs WHERE dma_MAC = @alias AND dma_DevMac = @devMac RETURNING dma_FirstSeen AS firstSeen, dma_LastSeen AS lastSeen',
  moveAliases: 'UPDATE DeviceMacs SET dma_DevMac = @to WHERE dma_DevMac = @from',
  // Aliases of devices that are gone (deleted by another process or the sqlite3 CLI).
  prune:
    'DELETE FROM DeviceMacs WHERE NOT EXISTS (SELECT 1 FROM Devices WHERE devMac = DeviceMacs.dma_DevMac)',
  seenTimes:
    'SELECT devFirstConnection AS firstSeen, devLastConnection AS lastSeen FROM Devices WHERE devMac = ?',
  // The target's non-empty fields win; its empty ones take from's (see emptySql, observedOnMerge).
  mergeFields: `UPDATE Devices SET ${mergedColumns(sqliteMerge)
    .map(([n, v]) => `${n} = ${v}`)
    .join(',\n      ')}
    FROM Devices AS f WHERE Devices.devMac = @to AND f.devMac = @from`,
  // A device never has two open sessions: from's is closed when the target has one.
  closeFromSession: `UPDATE Sessions INDEXED BY Sessions_open
    SET ses_EventTypeDisconnection = 'Disconnected', ses_DateTimeDisconnection = @now, ses_StillConnected = 0
    WHERE ses_MAC = @from AND ses_StillConnected = 1
      AND EXISTS (SELECT 1 FROM Sessions WHERE ses_MAC = @to AND ses_StillConnected = 1)`,
  // The history moves; the triggers of the history counts follow an UPDATE of the MAC.
  moveEvents: 'UPDATE Events SET eve_MAC = @to WHERE eve_MAC = @from',
  moveSessions: 'UPDATE Sessions SET ses_MAC = @to WHERE ses_MAC = @from',
  moveChildren: `UPDATE Devices SET devParentMAC = CASE WHEN devMac = @to THEN '' ELSE @to END
    WHERE devParentMAC = @from`,
} as const;

/** GET /devices: the SQL of one list shape (list-query.ts) over the stored columns. */
export function deviceListStatements(query: DeviceListQuery): { page: string; total: string; order: string } {
  return deviceListSql(query, `${columnList}, ${presenceFlagColumns}`);
}

/**
 * The per-device counts without the recount: the migration keeps `DeviceHistoryTotals` (all time)
 * and `DeviceHistoryBuckets` (per day and per month) up to date with triggers on Events and
 * Sessions, whoever writes them. A period's counts are then the buckets from the day after its
 * start on (days to the end of that month, then whole months: at most ~43 rows) plus the raw rows
 * between the start and that day (one day's worth at most), plus the open sessions.
 */
/**
 * A device's open sessions: they count in every period and end "now"; a start before the period is
 * clipped to it. `growing` open sessions add a second per second; `nextStart` is when a future one
 * starts to; `irregular` ones (a start that is not canonical storage text) keep a cache from
 * relying on that. (Through the index made for them: the planner would walk every session of the
 * device through Sessions_mac_stats.)
 */
const openSessionsSql = `SELECT COUNT(*) AS sessions,
      TOTAL(MAX(0, unixepoch(@now) - unixepoch(MAX(ses_DateTimeConnection, @start)))) AS seconds,
      COUNT(*) FILTER (WHERE ses_DateTimeConnection >= @start AND ses_DateTimeConnection <= @now) AS growing,
      MIN(ses_DateTimeConnection) FILTER (WHERE ses_DateTimeConnection > @now) AS nextStart,
      COUNT(*) FILTER (WHERE ses_DateTimeConnection IS NOT NULL
        AND datetime(ses_DateTimeConnection) IS NOT ses_DateTimeConnection) AS irregular
    FROM Sessions INDEXED BY Sessions_mac_open WHERE ses_MAC = @mac AND ${sessionOpen}`;

export const countSql = {
  // What every period reads: the device's DeviceHistoryTotals row (no row: zeros) and its open
  // sessions (`open*`), in one statement.
  kept: `SELECT coalesce(t.events, 0) AS events, coalesce(t.downAlerts, 0) AS downAlerts,
      coalesce(t.sessions, 0) AS sessions, coalesce(t.closedSeconds, 0) AS closedSeconds,
      coalesce(t.irregular, 0) AS irregular, o.sessions AS openSessions, o.seconds AS openSeconds,
      o.growing AS openGrowing, o.nextStart AS openNextStart, o.irregular AS openIrregular
    FROM (${openSessionsSql}) AS o LEFT JOIN DeviceHistoryTotals AS t ON t.mac = @mac`,
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
           d.devIsArchived, d.devLastIP, d.devPrimaryIPv6, d.devVendor, d.devCanSleep, d.devLastConnection,
           d.devMissesBeforeAbsent, d.devSite,
           COALESCE(s.misses, 0) AS misses, s.lastAbsence, COALESCE(s.flapping, 0) AS flapping
    FROM Devices d LEFT JOIN ScanState s ON s.mac = d.devMac`,
  // One site's devices and the given MACs (a JSON array), through Devices_site and the primary key:
  // a probe's cycle reads the devices it may judge, not every site's.
  loadScoped: `
    SELECT d.devMac, d.devPresentLastScan, d.devAlertDown, d.devAlertEvents, d.devScan,
           d.devIsArchived, d.devLastIP, d.devPrimaryIPv6, d.devVendor, d.devCanSleep, d.devLastConnection,
           d.devMissesBeforeAbsent, d.devSite,
           COALESCE(s.misses, 0) AS misses, s.lastAbsence, COALESCE(s.flapping, 0) AS flapping
    FROM Devices d LEFT JOIN ScanState s ON s.mac = d.devMac
    WHERE d.devSite = @site OR d.devMac IN (SELECT value FROM json_each(@macs))`,
  // The events that count towards flapping since the flap window's start, per device: one range of
  // the Events_time index over the window (minutes to hours of events), not a lookup per device.
  toggles: `
    SELECT eve_MAC AS mac, COUNT(*) AS toggles FROM Events INDEXED BY Events_time
    WHERE eve_DateTime > ? AND eve_EventType IN (${toggleEventTypes.map((t) => `'${t}'`).join(', ')})
    GROUP BY eve_MAC`,
  updatePresence: `
    UPDATE Devices SET devPresentLastScan = ?, devLastIP = ?,
      devLastConnection = COALESCE(?, devLastConnection), devVendor = COALESCE(?, devVendor),
      devPrimaryIPv6 = COALESCE(?, devPrimaryIPv6)
    WHERE devMac = ?`,
  setSite: `
    UPDATE Devices SET devSite = @site, devSyncHubNode = @node
    WHERE devMac = @mac AND NOT (devSite = @site AND devSyncHubNode = @node)`,
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
    INSERT INTO ScanState (mac, misses, lastAbsence, flapping) VALUES (?, ?, ?, ?)
    ON CONFLICT (mac) DO UPDATE SET misses = excluded.misses, lastAbsence = excluded.lastAbsence,
      flapping = excluded.flapping`,
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

/** Names and where they came from (the rules live in src/names/rules.ts). */
export const nameSql = {
  load: 'SELECT devMac, devName, devNameSource, devFQDN, devLastIP FROM Devices',
  get: 'SELECT devMac, devName, devNameSource, devFQDN, devLastIP FROM Devices WHERE devMac = ?',
  // An automatic name: never over a user or import name, even one written a moment ago.
  set: `UPDATE Devices SET
      devName = CASE WHEN @name IS NULL THEN devName ELSE @name END,
      devNameSource = CASE WHEN @name IS NULL THEN devNameSource ELSE @source END,
      devFQDN = COALESCE(@fqdn, devFQDN)
    WHERE devMac = @mac
      AND (@name IS NULL OR devNameSource NOT IN ('user', 'import'))
      AND (devName IS NOT COALESCE(@name, devName) OR devNameSource IS NOT COALESCE(@source, devNameSource)
        OR devFQDN IS NOT COALESCE(@fqdn, devFQDN))`,
  // A name written by a person (@source 'user') or an import ('import'); no name clears the source.
  markWritten: `UPDATE Devices SET devNameSource =
      CASE WHEN devName IN ('', '(unknown)') THEN '' ELSE @source END WHERE devMac = @mac`,
} as const;

/**
 * Which devices' answers a write on this connection changed, reported by TEMP triggers (they fire
 * for this connection only, whoever on it writes: routes, the scanner, an import, the alerts hook)
 * to `changedDeviceFunction`, a function the store registers on the connection: the store learns of
 * each change as it is made, without a table to read back. A device's answer shows its own row and
 * history, and its children's name, status, relation, port and IP, so a child's change also marks
 * its parent. A change that is rolled back stays marked, which only costs a cache entry. An update
 * that moved devLastConnection and no other column (a device seen again by a scan cycle) is
 * reported to `seenDeviceFunction` instead, with the new value: the answer differs by it only.
 * Commits by other connections are noticed through `PRAGMA data_version` instead.
 */
export const changedDeviceFunction = 'netkeep_device_changed';
export const seenDeviceFunction = 'netkeep_device_seen';
const mark = (value: string): string => `SELECT ${changedDeviceFunction}(${value})`;
/** Every Devices column but devLastConnection is as it was, and devLastConnection is a value. */
const onlySeen = `NEW.devLastConnection IS NOT NULL AND ${storedFields
  .filter((f) => f.name !== 'devLastConnection')
  .map((f) => `OLD.${f.name} IS NEW.${f.name}`)
  .join(' AND ')}`;
/** A field that the device's parent shows of it (`childColumns`), or the parent itself, changed. */
const parentShownChanged = ['devParentMAC', ...childColumns]
  .map((c) => `OLD.${c} IS NOT NEW.${c}`)
  .join(' OR ');
export const changeTrackingSql = `
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_seen AFTER UPDATE ON main.Devices
  WHEN ${onlySeen} BEGIN
    SELECT ${seenDeviceFunction}(NEW.devMac, NEW.devLastConnection);
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_insert AFTER INSERT ON main.Devices BEGIN
    ${mark('mac')} FROM (SELECT NEW.devMac AS mac UNION ALL
      SELECT NEW.devParentMAC WHERE NEW.devParentMAC != '');
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_delete AFTER DELETE ON main.Devices BEGIN
    ${mark('mac')} FROM (SELECT OLD.devMac AS mac UNION ALL
      SELECT OLD.devParentMAC WHERE OLD.devParentMAC != '');
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_update AFTER UPDATE ON main.Devices
  WHEN NOT (${onlySeen}) BEGIN
    ${mark('NEW.devMac')};
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_renamed AFTER UPDATE OF devMac ON main.Devices
  WHEN OLD.devMac IS NOT NEW.devMac BEGIN
    ${mark('OLD.devMac')};
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_parents AFTER UPDATE ON main.Devices
  WHEN (OLD.devParentMAC != '' OR NEW.devParentMAC != '') AND (${parentShownChanged}) BEGIN
    ${mark('OLD.devParentMAC')} WHERE OLD.devParentMAC != '';
    ${mark('NEW.devParentMAC')} WHERE NEW.devParentMAC != '';
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_alias_insert AFTER INSERT ON main.DeviceMacs BEGIN
    ${mark('NEW.dma_DevMac')};
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_alias_delete AFTER DELETE ON main.DeviceMacs BEGIN
    ${mark('OLD.dma_DevMac')};
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_alias_update AFTER UPDATE OF dma_DevMac ON main.DeviceMacs BEGIN
    ${mark('OLD.dma_DevMac')}; ${mark('NEW.dma_DevMac')};
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
  END;
  -- The scanner's memory decides devSleeping and devFlapping.
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_scanstate_insert AFTER INSERT ON main.ScanState BEGIN
    ${mark('NEW.mac')};
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_scanstate_delete AFTER DELETE ON main.ScanState BEGIN
    ${mark('OLD.mac')};
  END;
  CREATE TEMP TRIGGER IF NOT EXISTS ChangedDevices_scanstate_update AFTER UPDATE ON main.ScanState BEGIN
    ${mark('OLD.mac')}; ${mark('NEW.mac')};
  END;`;

export const dataVersionSql = 'PRAGMA data_version';

/** The change log (migration "The change log"), as change-tracking.ts reads it. */
export const changeLogSql = {
  // Two subqueries: SQLite reads a lone MIN or MAX from one end of the table, but both in one
  // SELECT scan every row.
  bounds: 'SELECT (SELECT MIN(id) FROM netkeep_change_log), (SELECT MAX(id) FROM netkeep_change_log)',
  // The devices of the rows in (?, ?]: each with the 'seen' value of its last row (SQLite takes
  // a bare column from the row of the lone MAX) and how many of its rows are not a text 'seen'
  // (a change that needs the answer read again, which wins over any 'seen').
  devicesAfter: `SELECT mac, seen, COUNT(*) - SUM(typeof(seen) = 'text'), MAX(id)
    FROM netkeep_change_log WHERE id > ? AND id <= ? GROUP BY mac`,
  // While held, the log's triggers append nothing (migration "The change log can be held").
  hold: 'INSERT INTO netkeep_change_log_held (held) VALUES (1)',
  release: 'DELETE FROM netkeep_change_log_held',
  append: 'INSERT INTO netkeep_change_log (mac, seen) VALUES (?, ?)',
} as const;

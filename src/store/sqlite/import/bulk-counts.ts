/**
 * Counts imported history in bulk instead of row by row.
 *
 * Why: the count triggers of Events and Sessions (the counts migration) update a totals row and two
 * to four bucket rows for every row inserted; for a million imported events that doubled the
 * import's CPU time (17 s without them, 36 s with them, docs/benchmarks.md). So, inside each batch's
 * transaction, the importer drops the table's insert trigger, inserts the batch, counts the new
 * rows with the migration's own backfill SQL (one source for the arithmetic) and creates the trigger
 * again from its stored text. DDL is transactional in SQLite: no other connection ever sees the
 * table without its trigger (writers wait for the batch's write lock, readers keep their snapshot),
 * and a batch that fails rolls the trigger back with its rows.
 *
 * How the backfill is pointed at the batch: it reads `Events` and `Sessions` and writes
 * `DeviceHistoryTotals` and `DeviceHistoryBuckets` by their unqualified names, and SQLite looks a
 * name up in the connection's temp schema first. While it runs, TEMP views of those names show it
 * only the rows just inserted, and TEMP tables of the count tables' names
 * receive its counts, which are then added into the real ones. Only this connection sees them.
 */
import type { Database, Statement } from 'better-sqlite3';
import { historyCountsBackfill } from '../migrations.js';

export type HistoryTable = 'Events' | 'Sessions';

/** The insert trigger of each history table, by the name the counts migration gives it. */
const insertTriggerNames: Readonly<Record<HistoryTable, string>> = {
  Events: 'Events_counts_insert',
  Sessions: 'Sessions_counts_insert',
};

/**
 * The change log's insert trigger of each history table (migration "The change log"), which would
 * append a row per imported row: off during a batch too, and the batch's devices are appended once
 * each after it.
 */
const logTriggers: Readonly<Record<HistoryTable, { name: string; mac: string }>> = {
  Events: { name: 'netkeep_changes_events_insert', mac: 'eve_MAC' },
  Sessions: { name: 'netkeep_changes_sessions_insert', mac: 'ses_MAC' },
};

const addCounts = `
  INSERT INTO main.DeviceHistoryTotals SELECT * FROM temp.DeviceHistoryTotals WHERE true
    ON CONFLICT (mac) DO UPDATE SET events = events + excluded.events,
      downAlerts = downAlerts + excluded.downAlerts, sessions = sessions + excluded.sessions,
      closedSeconds = closedSeconds + excluded.closedSeconds, irregular = irregular + excluded.irregular;
  INSERT INTO main.DeviceHistoryBuckets SELECT * FROM temp.DeviceHistoryBuckets WHERE true
    ON CONFLICT (mac, span, bucket) DO UPDATE SET events = events + excluded.events,
      downAlerts = downAlerts + excluded.downAlerts, ended = ended + excluded.ended,
      endedSum = endedSum + excluded.endedSum, started = started + excluded.started,
      startedSum = startedSum + excluded.startedSum;`;

export class BulkCounts {
  /** Per table with its trigger: the trigger's stored text, and the statement of its last rowid. */
  private readonly tables = new Map<HistoryTable, { trigger: string; lastRowid: Statement<[], number> }>();
  /** Per table, the change log's insert trigger's stored text (absent: none to turn off). */
  private readonly logTriggers = new Map<HistoryTable, string>();

  constructor(private readonly db: Database) {
    const stored = db.prepare<[string], string>(
      "SELECT sql FROM main.sqlite_master WHERE type = 'trigger' AND name = ?",
    );
    for (const [table, name] of Object.entries(insertTriggerNames) as [HistoryTable, string][]) {
      const trigger = stored.pluck().get(name);
      // A schema without the trigger (a later migration renamed it): the triggers keep counting.
      if (trigger !== undefined)
        this.tables.set(table, {
          trigger,
          lastRowid: db.prepare<[], number>(`SELECT COALESCE(MAX(rowid), 0) FROM main.${table}`).pluck(),
        });
      const logTrigger = stored.pluck().get(logTriggers[table].name);
      if (logTrigger !== undefined) this.logTriggers.set(table, logTrigger);
    }
  }

  /**
   * Runs `insert`, which may only insert into `table`, with that table's count trigger off, then
   * counts the rows it inserted. Call it inside the batch's transaction.
   */
  insertCounted<T>(table: HistoryTable, insert: () => T): T {
    const kept = this.tables.get(table);
    if (kept === undefined) return insert();
    const after = kept.lastRowid.get() ?? 0;
    const logTrigger = this.logTriggers.get(table);
    this.db.exec(`DROP TRIGGER main.${insertTriggerNames[table]}`);
    if (logTrigger !== undefined) this.db.exec(`DROP TRIGGER main.${logTriggers[table].name}`);
    const result = insert();
    this.countRowsAfter(table, after);
    this.db.exec(kept.trigger);
    if (logTrigger !== undefined) {
      this.db.exec(logTrigger);
      // `after` is an integer read from the table; the names are constants.
      this.db.exec(`INSERT INTO main.netkeep_change_log (mac)
        SELECT DISTINCT ${logTriggers[table].mac} FROM main.${table} WHERE rowid > ${Math.trunc(after)}`);
    }
    return result;
  }

  private countRowsAfter(table: HistoryTable, after: number): void {
    const other: HistoryTable = table === 'Events' ? 'Sessions' : 'Events';
    // `after` is an integer read from the table, never text from the source.
    this.db.exec(`
      CREATE TEMP VIEW ${table} AS SELECT * FROM main.${table} WHERE rowid > ${Math.trunc(after)};
      CREATE TEMP VIEW ${other} AS SELECT * FROM main.${other} WHERE false;
      CREATE TEMP TABLE DeviceHistoryTotals AS SELECT * FROM main.DeviceHistoryTotals WHERE false;
      CREATE TEMP TABLE DeviceHistoryBuckets AS SELECT * FROM main.DeviceHistoryBuckets WHERE false;`);
    try {
      this.db.exec(historyCountsBackfill);
      this.db.exec(addCounts);
    } finally {
      // Before the trigger is created again: with a TEMP view named like its table in place,
      // `CREATE TRIGGER ... ON Events` would attach to the view.
      // IF EXISTS: an error that rolled back the whole transaction took them already, and must
      // not be hidden by a "no such view" here.
      this.db.exec(`
        DROP VIEW IF EXISTS temp.${table};
        DROP VIEW IF EXISTS temp.${other};
        DROP TABLE IF EXISTS temp.DeviceHistoryTotals;
        DROP TABLE IF EXISTS temp.DeviceHistoryBuckets;`);
    }
  }
}

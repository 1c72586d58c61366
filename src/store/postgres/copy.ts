/**
 * Copies between the two stores, over one table list (`copiedTables`) and one batched walk
 * (`copyTables`), in both directions:
 *
 * - SQLite into PostgreSQL (`copySqliteToPostgres`: `npm run migrate-store`, and `npm run restore`
 *   of a backup file into PostgreSQL): table by table in batches, each batch one transaction of one
 *   statement. Every row keeps its key
 * (Events' and Sessions' rowid, the outbox ids), and a row whose key is there already is left as
 * it is, so that a copy that stopped half way is finished by running it again, and a second run
 * changes nothing. The history counts are not copied: PostgreSQL's count triggers derive them from
 * the copied Events and Sessions, and the copy then compares them with SQLite's.
 *
 *   The source is read in one read transaction (one snapshot, even while a server writes to it)
 *   and never written. The target must be empty, or hold a copy of this same source: a database
 *   with tables netkeep does not own, or netkeep rows that did not come from here, is refused
 *   before anything is written.
 * - PostgreSQL into a new SQLite file (`copyPostgresToSqlite`: GET /backup on PostgreSQL): the
 *   same tables read in one snapshot (REPEATABLE READ), written to a file at SQLite's schema of
 *   the same version, whose count triggers derive the history counts as PostgreSQL's did.
 */
import { rmSync } from 'node:fs';
import type { Database } from 'better-sqlite3';
import type { PoolClient } from 'pg';
import { openDatabase } from '../../db/connection.js';
import { DomainError } from '../../errors.js';
import { migratePostgres, postgresMigrations, postgresSchemaVersion } from './migrations.js';
import type { PostgresPool } from './pool.js';

/** The tables copied, in an order that satisfies the foreign key (payloads before their rows). */
export const copiedTables = [
  { table: 'Devices', key: ['devMac'], rowid: false },
  { table: 'DeviceMacs', key: ['dma_MAC'], rowid: false },
  { table: 'ScanState', key: ['mac'], rowid: false },
  { table: 'Events', key: ['rowid'], rowid: true },
  { table: 'Sessions', key: ['rowid'], rowid: true },
  { table: 'DevicePorts', key: ['dpo_MAC', 'dpo_Port', 'dpo_Protocol'], rowid: false },
  { table: 'WatchMemory', key: ['wat_Kind', 'wat_Key'], rowid: false },
  { table: 'NotificationPayloads', key: ['id'], rowid: false },
  { table: 'Notifications', key: ['id'], rowid: false },
  { table: 'Probes', key: ['prb_Id'], rowid: false },
  { table: 'ProbeCycles', key: ['pcy_ProbeId', 'pcy_CycleId'], rowid: false },
] as const;

/** Tables the PostgreSQL store keeps that are derived, or its own bookkeeping. */
const derivedTables = ['DeviceHistoryTotals', 'DeviceHistoryBuckets'];
const bookkeepingTables = ['netkeep_migrations', 'netkeep_store', 'netkeep_change_log'];

/** Identity columns whose sequence must continue after the copied keys. */
const identities = [
  ['Events', 'rowid'],
  ['Sessions', 'rowid'],
  ['NotificationPayloads', 'id'],
  ['Notifications', 'id'],
] as const;

export type CopiedTable = (typeof copiedTables)[number]['table'];
type TableSpec = (typeof copiedTables)[number];
type CopiedRow = Record<string, unknown>;

/** Where a copy reads: one table at a time, in key order, a batch at a time, all in one snapshot. */
interface TableSource {
  count(spec: TableSpec): Promise<number>;
  /** Up to `limit` rows whose key is after `after` (undefined: from the first), in key order. */
  rows(spec: TableSpec, after: readonly unknown[] | undefined, limit: number): Promise<CopiedRow[]>;
}

/** Where a copy writes: a batch of one table; how many rows it added (the rest were there). */
interface TableTarget {
  insert(spec: TableSpec, rows: readonly CopiedRow[]): Promise<number>;
}

const keyList = (spec: TableSpec): string => spec.key.map((k) => `"${k}"`).join(', ');

export interface TableCopy {
  readonly table: CopiedTable;
  /** Rows in the source. */
  readonly read: number;
  /** Rows this run added. */
  readonly added: number;
  /** Rows that were there already (an earlier run). */
  readonly present: number;
}

export interface CopyProgress {
  readonly table: CopiedTable;
  readonly done: number;
  readonly total: number;
}

export interface CopyReport {
  readonly tables: readonly TableCopy[];
  /** Devices whose history counts differ between the stores after the copy (none when right). */
  readonly countMismatches: readonly string[];
}

export interface CopyOptions {
  /** How the target records its source, to recognise a partial copy of it (the file's path). */
  readonly sourceId: string;
  /** Rows per INSERT (and transaction). */
  readonly batchSize?: number;
  /** Called after each batch; a promise it returns is awaited before the next batch (tests). */
  readonly onProgress?: (progress: CopyProgress) => void | Promise<void>;
}

/** The key under which netkeep_store records the source a copy came from. */
const sourceKey = 'copied-from';

function refuse(message: string): DomainError {
  return new DomainError('conflict', message, { code: 'STORE_NOT_EMPTY' });
}

/** Refuses a target that holds tables netkeep does not own (before anything is created in it). */
async function checkForeignTables(store: PostgresPool): Promise<void> {
  const ours = new Set<string>([...copiedTables.map((t) => t.table), ...derivedTables, ...bookkeepingTables]);
  const tables = await store.query<{ name: string }>(
    `SELECT table_schema || '.' || table_name AS name, table_name FROM information_schema.tables
     WHERE table_schema NOT IN ('pg_catalog', 'information_schema')
       AND NOT (table_schema = 'public' AND table_name = ANY($1))
     ORDER BY 1`,
    [[...ours]],
  );
  if (tables.length > 0) {
    const shown = tables.slice(0, 5).map((t) => t.name);
    throw refuse(
      `${store.address.label} holds tables netkeep does not own (${shown.join(', ')}${tables.length > 5 ? ', …' : ''}): migrate-store copies into an empty database (CREATE DATABASE … OWNER …) only`,
    );
  }
}

/** Refuses netkeep rows in the target unless an earlier run copied them from this same source. */
async function checkOwnRows(client: PoolClient, label: string, sourceId: string): Promise<void> {
  const marker = await client.query<{ value: string }>('SELECT value FROM netkeep_store WHERE key = $1', [
    sourceKey,
  ]);
  const from = marker.rows[0]?.value;
  if (from === sourceId) return;
  const counts: string[] = [];
  for (const { table } of copiedTables) {
    const { rows } = await client.query<{ n: number }>(`SELECT count(*)::bigint AS n FROM "${table}"`);
    const n = rows[0]?.n ?? 0;
    if (n > 0) counts.push(`${n} ${table}`);
  }
  if (counts.length === 0 && from === undefined) return;
  throw refuse(
    from === undefined
      ? `${label} already holds netkeep data (${counts.join(', ')}) that was not copied by migrate-store: it copies into an empty database only`
      : `${label} holds a copy of another SQLite store (${from}), not of ${sourceId}: it copies into an empty database only`,
  );
}

function sourceVersion(sqlite: Database): number {
  return sqlite.pragma('user_version', { simple: true }) as number;
}

/**
 * Copies `sqlite` into `store` (migrating the target's schema first). Throws a DomainError
 * `invalid` for a source at another schema version, `conflict` (STORE_NOT_EMPTY) for a target
 * that is not empty nor a copy of this source; STORE_UNAVAILABLE when the target cannot be reached.
 */
export async function copySqliteToPostgres(
  sqlite: Database,
  store: PostgresPool,
  options: CopyOptions,
): Promise<CopyReport> {
  const expected = postgresMigrations.at(-1)?.sqliteVersion ?? 0;
  const version = sourceVersion(sqlite);
  if (version !== expected) {
    throw new DomainError(
      'invalid',
      version < expected
        ? `the SQLite store is at schema version ${version}, older than this netkeep's (${expected}): start this netkeep on it once (it upgrades the schema), stop it, then copy`
        : `the SQLite store is at schema version ${version}, newer than this netkeep's (${expected}): copy it with the netkeep that wrote it`,
      { code: 'STORE_VERSION_MISMATCH' },
    );
  }
  await checkForeignTables(store);
  const label = store.address.label;
  const client = await store.connect();
  try {
    await migratePostgres(client);
    await checkOwnRows(client, label, options.sourceId);
    await client.query(
      'INSERT INTO netkeep_store (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING',
      [sourceKey, options.sourceId],
    );
  } catch (err) {
    throw store.translate(err);
  } finally {
    client.release();
  }

  // One snapshot of the source for the whole copy: a server writing to it meanwhile does not
  // tear a table, nor the foreign key between payloads and their rows.
  sqlite.exec('BEGIN');
  let tables: TableCopy[];
  try {
    tables = await copyTables(sqliteSource(sqlite), postgresTarget(store), options);
  } finally {
    sqlite.exec('COMMIT');
  }

  // New rows written by netkeep on PostgreSQL continue after the copied keys.
  for (const [table, column] of identities) {
    await store.query(
      `SELECT setval(pg_get_serial_sequence('"${table}"', '${column}'),
         greatest((SELECT coalesce(max("${column}"), 0) FROM "${table}"), 1), (SELECT count(*) > 0 FROM "${table}"))`,
    );
  }
  return { tables, countMismatches: await compareCounts(sqlite, store) };
}

/** Every copied table from `source` to `target`, in batches, in the list's order. */
async function copyTables(
  source: TableSource,
  target: TableTarget,
  options: Pick<CopyOptions, 'batchSize' | 'onProgress'>,
): Promise<TableCopy[]> {
  const batchSize = Math.max(1, options.batchSize ?? 2000);
  const tables: TableCopy[] = [];
  for (const spec of copiedTables) {
    const total = await source.count(spec);
    let done = 0;
    let added = 0;
    let last: unknown[] | undefined;
    for (;;) {
      const rows = await source.rows(spec, last, batchSize);
      if (rows.length === 0) break;
      const end = rows[rows.length - 1] ?? {};
      last = spec.key.map((k) => end[k]);
      added += await target.insert(spec, rows);
      done += rows.length;
      await options.onProgress?.({ table: spec.table, done, total });
    }
    if (total === 0) await options.onProgress?.({ table: spec.table, done: 0, total: 0 });
    tables.push({ table: spec.table, read: total, added, present: total - added });
  }
  return tables;
}

/**
 * A SQLite database as a source, read inside the caller's read transaction. Each read ends before
 * its batch is written: the event loop may not run while a statement is open.
 */
function sqliteSource(sqlite: Database): TableSource {
  const columns = (spec: TableSpec): string => (spec.rowid ? 'rowid AS "rowid", *' : '*');
  return {
    count: (spec) =>
      Promise.resolve(
        sqlite.prepare<[], { n: number }>(`SELECT count(*) AS n FROM "${spec.table}"`).get()?.n ?? 0,
      ),
    rows: (spec, after, limit) => {
      const keys = keyList(spec);
      const rows =
        after === undefined
          ? sqlite.prepare(`SELECT ${columns(spec)} FROM "${spec.table}" ORDER BY ${keys} LIMIT ?`).all(limit)
          : sqlite
              .prepare(
                `SELECT ${columns(spec)} FROM "${spec.table}" WHERE (${keys}) > (${spec.key.map(() => '?').join(', ')})
                 ORDER BY ${keys} LIMIT ?`,
              )
              .all(...after, limit);
      return Promise.resolve(rows as CopiedRow[]);
    },
  };
}

/** A PostgreSQL snapshot (the caller's REPEATABLE READ transaction on `client`) as a source. */
function postgresSource(client: Pick<PoolClient, 'query'>): TableSource {
  return {
    count: async (spec) =>
      (await client.query<{ n: number }>(`SELECT count(*)::bigint AS n FROM "${spec.table}"`)).rows[0]?.n ??
      0,
    rows: async (spec, after, limit) => {
      const keys = keyList(spec);
      const where =
        after === undefined ? '' : `WHERE (${keys}) > (${spec.key.map((_, i) => `$${i + 2}`).join(', ')})`;
      const { rows } = await client.query<CopiedRow>(
        `SELECT * FROM "${spec.table}" ${where} ORDER BY ${keys} LIMIT $1`,
        [limit, ...(after ?? [])],
      );
      return rows;
    },
  };
}

/** JSON for PostgreSQL's json_populate_recordset: a BLOB (a probe's token hash) as bytea's hex text. */
const postgresJson = (rows: readonly CopiedRow[]): string =>
  JSON.stringify(rows, function (this: CopiedRow, key: string, value: unknown) {
    const raw = this[key];
    return Buffer.isBuffer(raw) ? `\\x${raw.toString('hex')}` : value;
  });

/** A PostgreSQL database as a target: each batch one transaction; rows whose key is there are skipped. */
function postgresTarget(store: PostgresPool): TableTarget {
  return {
    insert: async (spec, rows) => {
      const insert = `INSERT INTO "${spec.table}" SELECT * FROM json_populate_recordset(NULL::"${spec.table}", $1::json)
        ON CONFLICT (${keyList(spec)}) DO NOTHING`;
      const result = await store.transaction(async (c) => c.query(insert, [postgresJson(rows)]));
      return result.rowCount ?? 0;
    },
  };
}

/**
 * A new SQLite database as a target, inside the caller's write transaction: every row as it is,
 * its rowid included (the columns are the table's own, as PostgreSQL named them).
 */
function sqliteTarget(sqlite: Database): TableTarget {
  return {
    insert: (spec, rows) => {
      const first = rows[0];
      if (first === undefined) return Promise.resolve(0);
      const names = Object.keys(first);
      const statement = sqlite.prepare(
        `INSERT INTO "${spec.table}" (${names.map((n) => `"${n}"`).join(', ')}) VALUES (${names.map(() => '?').join(', ')})`,
      );
      for (const row of rows) statement.run(...names.map((n) => row[n]));
      return Promise.resolve(rows.length);
    },
  };
}

/**
 * Writes the PostgreSQL store, as one snapshot of it, into `target`: a new SQLite file at this
 * netkeep's schema (the same version as PostgreSQL's). The file is complete when this resolves;
 * on any error it is removed. Writes to PostgreSQL go on meanwhile and are not in it.
 */
export async function copyPostgresToSqlite(
  store: PostgresPool,
  target: string,
  options: Pick<CopyOptions, 'batchSize' | 'onProgress'> = {},
): Promise<TableCopy[]> {
  const sqlite = openDatabase(target);
  let complete = false;
  try {
    const tables = await store.transaction(async (client) => {
      // The file is at this netkeep's schema: the database must be at the same one (a newer
      // netkeep may have migrated it further; an older one never ran here, as this one migrates).
      const applied = await postgresSchemaVersion(client);
      const own = sqlite.pragma('user_version', { simple: true }) as number;
      if (applied !== postgresMigrations.length || postgresMigrations.at(-1)?.sqliteVersion !== own)
        throw new DomainError(
          'conflict',
          `the PostgreSQL store is at schema version ${applied}, this netkeep's is ${postgresMigrations.length}: back it up with the netkeep that runs on it`,
          { code: 'STORE_VERSION_MISMATCH' },
        );
      sqlite.exec('BEGIN');
      try {
        const copied = await copyTables(postgresSource(client), sqliteTarget(sqlite), options);
        sqlite.exec('COMMIT');
        return copied;
      } catch (err) {
        sqlite.exec('ROLLBACK');
        throw err;
      }
    }, 'snapshot');
    // One self-contained file (no -wal beside it), for a download.
    sqlite.pragma('journal_mode = DELETE');
    complete = true;
    return tables;
  } finally {
    sqlite.close();
    if (!complete)
      for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(target + suffix, { force: true });
  }
}

/** What a copy into PostgreSQL did, table by table, as `migrate-store` and `restore` print it. */
export function copySummary(report: CopyReport, source: string, target: string): string {
  const lines = [`Copied ${source}`, `  into ${target}`];
  for (const t of report.tables) {
    lines.push(`  ${t.table.padEnd(20)} read ${t.read}: added ${t.added}, already there ${t.present}`);
  }
  lines.push('  history counts: derived from the copied Events and Sessions');
  if (report.countMismatches.length > 0) {
    const shown = report.countMismatches.slice(0, 10).join(', ');
    lines.push(
      `  warning: the history counts of ${report.countMismatches.length} devices differ from the SQLite store's: ${shown}`,
    );
  } else lines.push('  history counts: the same as the SQLite store');
  return lines.join('\n');
}

interface TotalsRow {
  readonly mac: string;
  readonly events: number;
  readonly downAlerts: number;
  readonly sessions: number;
  readonly closedSeconds: number;
  readonly irregular: number;
}

/**
 * The devices whose counts differ between the stores: their totals, and their bucket sums per span.
 * Rows of zeros are left out: the history they counted was deleted (a store keeps such rows, a
 * fresh copy has none).
 */
async function compareCounts(sqlite: Database, store: PostgresPool): Promise<string[]> {
  const totals = `SELECT "mac", "events", "downAlerts", "sessions", "closedSeconds", "irregular" FROM "DeviceHistoryTotals"
    WHERE "events" <> 0 OR "downAlerts" <> 0 OR "sessions" <> 0 OR "closedSeconds" <> 0 OR "irregular" <> 0`;
  const key = (r: TotalsRow): string =>
    `${r.events}/${r.downAlerts}/${r.sessions}/${r.closedSeconds}/${r.irregular}`;
  const lite = new Map(
    sqlite
      .prepare<[], TotalsRow>(totals)
      .all()
      .map((r) => [r.mac, key(r)]),
  );
  const pg = new Map(
    (await store.query<TotalsRow & Record<string, unknown>>(totals)).map((r) => [r.mac, key(r)]),
  );
  const differ = new Set<string>();
  for (const [mac, value] of lite) if (pg.get(mac) !== value) differ.add(mac);
  for (const mac of pg.keys()) if (!lite.has(mac)) differ.add(mac);
  const buckets = `SELECT "mac", "span", sum("events") AS e, sum("downAlerts") AS d, sum("ended") AS en,
      sum("endedSum") AS es, sum("started") AS st, sum("startedSum") AS ss
    FROM "DeviceHistoryBuckets" GROUP BY "mac", "span"
    HAVING sum(abs("events")) + sum(abs("downAlerts")) + sum(abs("ended")) + sum(abs("endedSum")) + sum(abs("started")) + sum(abs("startedSum")) <> 0`;
  type BucketSums = Record<string, unknown> & { mac: string; span: number };
  const sums = (r: BucketSums): string =>
    `${r.span}:${[r.e, r.d, r.en, r.es, r.st, r.ss].map(Number).join('/')}`;
  const liteBuckets = new Set(
    sqlite
      .prepare<[], BucketSums>(buckets)
      .all()
      .map((r) => `${r.mac} ${sums(r)}`),
  );
  const pgBuckets = new Set((await store.query<BucketSums>(buckets)).map((r) => `${r.mac} ${sums(r)}`));
  for (const entry of liteBuckets) if (!pgBuckets.has(entry)) differ.add(entry.split(' ')[0] ?? '');
  for (const entry of pgBuckets) if (!liteBuckets.has(entry)) differ.add(entry.split(' ')[0] ?? '');
  return [...differ].sort();
}

/**
 * The tables under an in-process server (inject.ts), read and written from another connection, on
 * either store: for HTTP tests on both stores (stores.ts) that check "nothing changed" row by row,
 * or seed history as the scanner would. SQL is written once, in the subset both dialects read:
 * identifiers double-quoted ("Devices"."devMac"), `?` placeholders (turned into $1, $2... on
 * PostgreSQL), no `rowid` of Devices (PostgreSQL's Events and Sessions have an explicit one).
 *
 * A write from another connection reaches a PostgreSQL server's caches through NOTIFY, a moment
 * after its COMMIT (SQLite's server sees it at its next read): `seedHistory` waits until the
 * server's answer shows the history it wrote.
 */
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { openPostgres, type PostgresPool } from '../../src/store/postgres/pool.js';
import { dbTime } from '../../src/time.js';
import type { SeedEvent, SeedSession } from '../devices/history.js';
import type { InProcessServer } from './inject.js';

export type TableRow = Record<string, unknown>;

export interface StoreTables {
  all(sql: string, params?: readonly unknown[]): Promise<TableRow[]>;
  /** The first column of the first row (undefined without one). */
  value(sql: string, params?: readonly unknown[]): Promise<unknown>;
  run(sql: string, params?: readonly unknown[]): Promise<void>;
  /** Every row of Devices, Events and Sessions, for "nothing changed" assertions. */
  dump(): Promise<string>;
  /** The names of the store's tables, sorted. */
  tableNames(): Promise<string[]>;
  /**
   * After a write of this connection: `check` (the server's answers show it) holds. On SQLite at
   * once (the server reads another connection's commit at its next read); on PostgreSQL once the
   * server has heard of it (NOTIFY), within 5 s. Fails with `what` otherwise.
   */
  until(check: () => Promise<boolean>, what: string): Promise<void>;
  /** Writes `mac`'s history as the scanner would; for a device that exists, waits until it shows. */
  seedHistory(mac: string, seed: { events: SeedEvent[]; sessions: SeedSession[] }): Promise<void>;
  close(): Promise<void>;
}

const insertEvent =
  'INSERT INTO "Events" ("eve_MAC", "eve_IP", "eve_DateTime", "eve_EventType") VALUES (?, \'192.0.2.1\', ?, ?)';
const insertSession = `INSERT INTO "Sessions" ("ses_MAC", "ses_IP", "ses_EventTypeConnection", "ses_DateTimeConnection",
  "ses_EventTypeDisconnection", "ses_DateTimeDisconnection", "ses_StillConnected")
  VALUES (?, '192.0.2.1', 'Connected', ?, ?, ?, ?)`;

function seedRows(
  mac: string,
  seed: { events: SeedEvent[]; sessions: SeedSession[] },
): [string, unknown[]][] {
  return [
    ...seed.events.map((e): [string, unknown[]] => [insertEvent, [mac, dbTime(new Date(e.at)), e.type]]),
    ...seed.sessions.map((s): [string, unknown[]] => [
      insertSession,
      [
        mac,
        s.from === null ? null : dbTime(new Date(s.from)),
        s.to === null ? '' : 'Disconnected',
        s.to === null ? null : dbTime(new Date(s.to)),
        s.to === null ? 1 : 0,
      ],
    ]),
  ];
}

class SqliteTables implements StoreTables {
  private readonly db: Database.Database;
  constructor(file: string) {
    this.db = new Database(file);
    this.db.pragma('busy_timeout = 5000');
  }
  all(sql: string, params: readonly unknown[] = []): Promise<TableRow[]> {
    return Promise.resolve(this.db.prepare<unknown[], TableRow>(sql).all(...params));
  }
  async value(sql: string, params: readonly unknown[] = []): Promise<unknown> {
    const row = (await this.all(sql, params))[0];
    return row === undefined ? undefined : Object.values(row)[0];
  }
  run(sql: string, params: readonly unknown[] = []): Promise<void> {
    this.db.prepare(sql).run(...params);
    return Promise.resolve();
  }
  dump(): Promise<string> {
    return Promise.resolve(
      ['Devices', 'Events', 'Sessions']
        .map(
          (t) =>
            `${t}\n${JSON.stringify(this.db.prepare(`SELECT rowid, * FROM "${t}" ORDER BY rowid`).all())}`,
        )
        .join('\n'),
    );
  }
  async tableNames(): Promise<string[]> {
    return (await this.all("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")).map((r) =>
      String(r.name),
    );
  }
  async until(check: () => Promise<boolean>, what: string): Promise<void> {
    assert.ok(await check(), what);
  }
  seedHistory(mac: string, seed: { events: SeedEvent[]; sessions: SeedSession[] }): Promise<void> {
    this.db.transaction(() => {
      for (const [sql, params] of seedRows(mac, seed)) this.db.prepare(sql).run(...params);
    })();
    return Promise.resolve();
  }
  close(): Promise<void> {
    this.db.close();
    return Promise.resolve();
  }
}

/** `?` placeholders as PostgreSQL's $1, $2... (the tests' SQL has no `?` inside its literals). */
function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${String((n += 1))}`);
}

class PostgresTables implements StoreTables {
  constructor(
    private readonly pool: PostgresPool,
    private readonly server: TablesOwner,
  ) {}
  all(sql: string, params: readonly unknown[] = []): Promise<TableRow[]> {
    return this.pool.query<TableRow>(numbered(sql), params);
  }
  async value(sql: string, params: readonly unknown[] = []): Promise<unknown> {
    const row = (await this.all(sql, params))[0];
    return row === undefined ? undefined : Object.values(row)[0];
  }
  async run(sql: string, params: readonly unknown[] = []): Promise<void> {
    await this.all(sql, params);
  }
  async dump(): Promise<string> {
    const parts: string[] = [];
    for (const [t, order] of [
      ['Devices', '"devMac"'],
      ['Events', '"rowid"'],
      ['Sessions', '"rowid"'],
    ] as const)
      parts.push(`${t}\n${JSON.stringify(await this.all(`SELECT * FROM "${t}" ORDER BY ${order}`))}`);
    return parts.join('\n');
  }
  async tableNames(): Promise<string[]> {
    return (
      await this.all(
        'SELECT table_name AS "name" FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name',
      )
    ).map((r) => String(r.name));
  }
  async until(check: () => Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 200; i++) {
      if (await check()) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    assert.fail(`never seen: ${what}`);
  }
  async seedHistory(mac: string, seed: { events: SeedEvent[]; sessions: SeedSession[] }): Promise<void> {
    const path = `/device/${mac}?period=all`;
    const request = this.server.request?.bind(this.server);
    if (request === undefined) throw new Error('seedHistory needs an in-process server');
    const before = await request('GET', path);
    await this.pool.transaction(async (client) => {
      for (const [sql, params] of seedRows(mac, seed)) await client.query(numbered(sql), params);
    });
    // The server hears of it through NOTIFY: wait until its view of the device counts every session.
    if (before.status === 404) return;
    // devEvents counts what is not a connection or a disconnection (DESIGN 4).
    const counted = seed.events.filter((e) => e.type !== 'Connected' && e.type !== 'Disconnected').length;
    const want = [
      Number(before.json.devSessions) + seed.sessions.length,
      Number(before.json.devEvents) + counted,
    ];
    await this.until(
      async () => {
        const now = (await request('GET', path)).json;
        return now.devSessions === want[0] && now.devEvents === want[1];
      },
      `${path} counting the ${String(seed.sessions.length)} sessions and ${String(seed.events.length)} events written`,
    );
  }
  close(): Promise<void> {
    return this.pool.close();
  }
}

/**
 * A server whose tables a test reads: its DATA_DIR and DATABASE_URL ('' on SQLite); an in-process
 * server (inject.ts) also answers requests, which `seedHistory` needs.
 */
export type TablesOwner = Pick<InProcessServer, 'dataDir' | 'databaseUrl'> &
  Partial<Pick<InProcessServer, 'request'>>;

/** The tables of `server`'s store, through a connection of the test's own. */
export async function openTables(server: TablesOwner): Promise<StoreTables> {
  if (server.databaseUrl === '') return new SqliteTables(join(server.dataDir, 'netkeep.db'));
  return new PostgresTables(await openPostgres(server.databaseUrl), server);
}

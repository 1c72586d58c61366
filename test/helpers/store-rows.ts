/**
 * Reads a test server's tables directly, on either store: the SQLite file of an InProcessServer
 * (read-only) or its PostgreSQL database (DATABASE_URL). For the tests that check what an answer
 * left in the tables (a refused upload changed no row), which the API does not show. The SQL is
 * written once for both: identifiers double-quoted (as PostgreSQL's schema spells them; SQLite
 * accepts the quotes) and `?` placeholders (numbered for PostgreSQL here).
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { PostgresPool } from '../../src/store/postgres/pool.js';
import type { InProcessServer } from './inject.js';

export type Row = Record<string, unknown>;

export interface StoreRows {
  rows(sql: string, ...params: unknown[]): Promise<Row[]>;
  /** The `n` of the first row (a `SELECT COUNT(*) AS n ...`). */
  count(sql: string, ...params: unknown[]): Promise<number>;
  close(): Promise<void>;
}

export function storeRows(server: Pick<InProcessServer, 'dataDir' | 'databaseUrl'>): StoreRows {
  let rows: StoreRows['rows'];
  let close: () => Promise<void>;
  if (server.databaseUrl === undefined) {
    const db = new Database(join(server.dataDir, 'netkeep.db'), { readonly: true });
    rows = (sql, ...params) => Promise.resolve(db.prepare<unknown[], Row>(sql).all(...params));
    close = () => {
      db.close();
      return Promise.resolve();
    };
  } else {
    const pool = new PostgresPool(server.databaseUrl, { max: 2 });
    rows = (sql, ...params) => {
      let n = 0;
      return pool.query<Row>(
        sql.replace(/\?/g, () => `$${++n}`),
        params,
      );
    };
    close = () => pool.close();
  }
  return {
    rows,
    count: async (sql, ...params) => Number((await rows(sql, ...params))[0]?.n),
    close,
  };
}

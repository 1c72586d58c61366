/** Opens the SQLite database file with the settings every connection needs, then migrates it. */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { migrate } from '../store/sqlite/migrations.js';

export type { Database } from 'better-sqlite3';

export function openDatabase(file: string): Database.Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  // WAL: readers never block the writer; synchronous=FULL so an acknowledged write survives a
  // power cut, not only a process crash.
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  // The history counts are kept by triggers; a row that INSERT OR REPLACE removes fires its
  // DELETE trigger only with this on (SQLite's rule), so that such a write is counted right too.
  db.pragma('recursive_triggers = ON');
  migrate(db);
  return db;
}

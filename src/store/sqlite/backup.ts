/**
 * THE backup: a consistent copy of the SQLite store made with SQLite's online backup API, while
 * readers and the writer keep working (pages written during the copy are copied again). Used by
 * `npm run backup` (its own read-only connection) and by `GET /backup` (the server's connection).
 * Also what `npm run restore` checks a file with before it replaces the store.
 */
import { closeSync, lstatSync, openSync, readSync } from 'node:fs';
import Database from 'better-sqlite3';
import { openDatabase } from '../../db/connection.js';
import type { BackupStore } from '../backup.js';
import { migrations } from './migrations.js';

/** Copies the database behind `db` to `target` (a new file) with the online backup API. */
export async function snapshot(db: Database.Database, target: string): Promise<void> {
  await db.backup(target);
}

/** The server's backups (GET /backup): snapshots of its own connection. */
export class SqliteBackupStore implements BackupStore {
  constructor(private readonly db: Database.Database) {}

  snapshot(target: string): Promise<void> {
    return snapshot(this.db, target);
  }
}

/** `npm run backup`: a snapshot of the database file `source` through a read-only connection of its own. */
export async function backupFile(source: string, target: string): Promise<void> {
  const db = new Database(source, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    await snapshot(db, target);
  } finally {
    db.close();
  }
}

/** The database is open elsewhere (a running server): nothing may replace it. */
export class InUse extends Error {
  override name = 'InUse';
}

/**
 * Whether another process has the database open (a running server): every connection to a WAL
 * database holds a shared lock on it while open, so an exclusive lock taken without waiting fails.
 * When none is held, any WAL a crashed server left is checkpointed into the file before it moves.
 */
export function takeOver(path: string): void {
  const db = new Database(path, { fileMustExist: true, timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    try {
      db.exec('BEGIN EXCLUSIVE; COMMIT');
    } catch (err) {
      if ((err as { code?: string }).code?.startsWith('SQLITE_BUSY') === true)
        throw new InUse(
          `${path} is in use: stop the netkeep server (and anything else that has the database open) before restoring`,
        );
      throw err;
    }
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.pragma('journal_mode = DELETE');
  } finally {
    db.close();
  }
}

/** Opens the restored file (running the migrations an older backup needs) and counts its rows. */
export function migrateAndCount(path: string): Omit<BackupContents, 'schemaVersion'> {
  const db = openDatabase(path);
  try {
    return countRows(db);
  } finally {
    db.close();
  }
}

export interface BackupContents {
  readonly schemaVersion: number;
  readonly devices: number;
  readonly events: number;
  readonly sessions: number;
}

/** Why a file cannot be restored: the sentence the CLI prints. */
export class NotABackup extends Error {
  override name = 'NotABackup';
}

const sqliteHeader = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * Checks that `file` is a regular file holding an intact netkeep database whose schema this
 * netkeep knows (not newer), and says what it holds. The file is opened read-only and only after
 * its header was read from a regular file: a FIFO or a device would block or never end.
 */
export function inspectBackup(file: string): BackupContents {
  let stat;
  try {
    stat = lstatSync(file);
  } catch {
    throw new NotABackup(`${file} does not exist`);
  }
  if (!stat.isFile()) throw new NotABackup(`${file} is not a regular file`);
  const header = Buffer.alloc(sqliteHeader.length);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, header, 0, header.length, 0);
  } finally {
    closeSync(fd);
  }
  if (!header.equals(sqliteHeader)) throw new NotABackup(`${file} is not a SQLite database`);
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new NotABackup(`${file} cannot be opened as a SQLite database: ${(err as Error).message}`);
  }
  try {
    let check: unknown;
    try {
      check = db.prepare('PRAGMA integrity_check').pluck().get();
    } catch (err) {
      throw new NotABackup(`${file} is damaged: ${(err as Error).message}`);
    }
    if (check !== 'ok') throw new NotABackup(`${file} is damaged (integrity check: ${String(check)})`);
    const schemaVersion = db.pragma('user_version', { simple: true }) as number;
    const tables = new Set(
      db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all() as string[],
    );
    if (schemaVersion === 0 || !['Devices', 'Events', 'Sessions'].every((t) => tables.has(t)))
      throw new NotABackup(
        `${file} is a SQLite database but not a netkeep one (no Devices, Events, Sessions)`,
      );
    if (schemaVersion > migrations.length)
      throw new NotABackup(
        `${file} has schema version ${schemaVersion}, newer than this netkeep (${migrations.length}): restore it with the netkeep that made it, or a newer one`,
      );
    return { schemaVersion, ...countRows(db) };
  } finally {
    db.close();
  }
}

/** The rows a restore reports. */
export function countRows(db: Database.Database): Omit<BackupContents, 'schemaVersion'> {
  const count = (table: string) => db.prepare(`SELECT COUNT(*) FROM ${table}`).pluck().get() as number;
  return { devices: count('Devices'), events: count('Events'), sessions: count('Sessions') };
}

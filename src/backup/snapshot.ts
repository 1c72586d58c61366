/**
 * THE backup: a consistent copy of the SQLite store made with SQLite's online backup API, while
 * readers and the writer keep working (pages written during the copy are copied again). Used by
 * `npm run backup` (its own read-only connection) and by `GET /backup` (the server's connection).
 * Also what `npm run restore` checks a file with before it replaces the store.
 */
import { closeSync, lstatSync, openSync, readSync } from 'node:fs';
import Database from 'better-sqlite3';
import { migrations } from '../db/migrations.js';

/** Copies the database behind `db` to `target` (a new file) with the online backup API. */
export async function snapshot(db: Database.Database, target: string): Promise<void> {
  await db.backup(target);
}

/** A UTC stamp for file names: 20261126-133600. */
export function fileStamp(at = new Date()): string {
  return at.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
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

/**
 * `npm run restore -- --database-url <url> <file>`'s work: a backup file (a SQLite netkeep
 * database, from either store's GET /backup or `npm run backup`) into an empty PostgreSQL
 * database, with migrate-store's copy (copy.ts). The file is checked first and never written: it
 * is copied aside and brought to this netkeep's schema there. The same file restored again
 * finishes a copy that stopped half way; any other source is refused by a non-empty target.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { inspectBackup, migrateAndCount, type BackupContents } from '../sqlite/backup.js';
import { copySqliteToPostgres, type CopyOptions, type CopyReport } from './copy.js';
import type { PostgresPool } from './pool.js';

export interface RestoreReport {
  /** The file as it was checked (its schema version, its rows). */
  readonly contents: BackupContents;
  /** What the copy did, table by table. */
  readonly copy: CopyReport;
}

/**
 * Restores `file` into `store`. Throws NotABackup for a file that is not a netkeep backup this
 * netkeep can read, a DomainError `conflict` (STORE_NOT_EMPTY) for a target that is not empty.
 */
export async function restoreToPostgres(
  file: string,
  store: PostgresPool,
  options: Pick<CopyOptions, 'onProgress'> = {},
): Promise<RestoreReport> {
  const contents = inspectBackup(file);
  const sourceId = `backup ${file} (sha256 ${createHash('sha256').update(readFileSync(file)).digest('hex')})`;
  const aside = mkdtempSync(join(tmpdir(), 'netkeep-restore-'));
  try {
    const copy = join(aside, 'netkeep.db');
    copyFileSync(file, copy);
    migrateAndCount(copy); // the migrations an older backup needs, on the copy
    const sqlite = new Database(copy, { readonly: true, fileMustExist: true });
    try {
      return { contents, copy: await copySqliteToPostgres(sqlite, store, { sourceId, ...options }) };
    } finally {
      sqlite.close();
    }
  } finally {
    rmSync(aside, { recursive: true, force: true });
  }
}

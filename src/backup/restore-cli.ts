/**
 * `npm run restore -- <file>`: puts a backup (from `npm run backup` or `GET /backup`) into a
 * STOPPED server's $DATA_DIR. The file is checked first (a regular file, an intact netkeep
 * database, a schema not newer than this netkeep); the database it replaces is kept as
 * netkeep.db.before-restore-<UTC time>; then the migrations run and the counts are printed.
 * Exit 2, changing nothing, when the server is running or the file is refused.
 */
import { copyFileSync, existsSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { ConfigError, loadConfig } from '../config.js';
import { openDatabase } from '../db/connection.js';
import { countRows, fileStamp, inspectBackup, NotABackup } from './snapshot.js';

class Refused extends Error {}

/**
 * Whether another process has the database open (a running server): every connection to a WAL
 * database holds a shared lock on it while open, so an exclusive lock taken without waiting fails.
 * When none is held, any WAL a crashed server left is checkpointed into the file before it moves.
 */
function takeOver(path: string): void {
  const db = new Database(path, { fileMustExist: true, timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    try {
      db.exec('BEGIN EXCLUSIVE; COMMIT');
    } catch (err) {
      if ((err as { code?: string }).code?.startsWith('SQLITE_BUSY') === true)
        throw new Refused(
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

function main(argv: readonly string[]): number {
  if (argv.length !== 1 || argv[0]?.startsWith('-')) {
    process.stderr.write('usage: npm run restore -- <backup file>\n');
    return 2;
  }
  const file = resolve(argv[0] ?? '');
  let dataDir: string;
  try {
    dataDir = loadConfig().DATA_DIR;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`netkeep restore: configuration error: ${err.message}\n`);
    return 2;
  }
  const target = join(dataDir, 'netkeep.db');
  try {
    const contents = inspectBackup(file);
    let kept: string | undefined;
    if (existsSync(target)) {
      takeOver(target);
      kept = `${target}.before-restore-${fileStamp()}`;
      renameSync(target, kept);
      for (const suffix of ['-wal', '-shm']) rmSync(target + suffix, { force: true });
    }
    // Copied next to the store, then renamed: the store is never a half-written file.
    const partial = `${target}.restoring`;
    copyFileSync(file, partial);
    renameSync(partial, target);
    const db = openDatabase(target); // runs the migrations a older backup needs
    const counts = countRows(db);
    db.close();
    process.stdout.write(
      `restored ${file} (schema ${contents.schemaVersion}) into ${target}: ${counts.devices} devices, ${counts.events} events, ${counts.sessions} sessions\n` +
        (kept === undefined ? '' : `the database it replaced is kept as ${kept}\n`),
    );
    return 0;
  } catch (err) {
    if (!(err instanceof NotABackup) && !(err instanceof Refused)) throw err;
    process.stderr.write(`netkeep restore: ${err.message}; nothing was changed\n`);
    return 2;
  }
}

process.exitCode = main(process.argv.slice(2));

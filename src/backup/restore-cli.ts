/**
 * `npm run restore -- <file>`: puts a backup (from `npm run backup` or `GET /backup`) into a
 * STOPPED server's $DATA_DIR. The file is checked first (a regular file, an intact netkeep
 * database, a schema not newer than this netkeep); the database it replaces is kept as
 * netkeep.db.before-restore-<UTC time>; then the migrations run and the counts are printed.
 * Exit 2, changing nothing, when the server is running or the file is refused.
 */
import { copyFileSync, existsSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError, loadConfig } from '../config.js';
import { fileStamp } from '../store/backup.js';
import { InUse, inspectBackup, migrateAndCount, NotABackup, takeOver } from '../store/sqlite/backup.js';

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
    const counts = migrateAndCount(target); // runs the migrations an older backup needs
    process.stdout.write(
      `restored ${file} (schema ${contents.schemaVersion}) into ${target}: ${counts.devices} devices, ${counts.events} events, ${counts.sessions} sessions\n` +
        (kept === undefined ? '' : `the database it replaced is kept as ${kept}\n`),
    );
    return 0;
  } catch (err) {
    if (!(err instanceof NotABackup) && !(err instanceof InUse)) throw err;
    process.stderr.write(`netkeep restore: ${err.message}; nothing was changed\n`);
    return 2;
  }
}

process.exitCode = main(process.argv.slice(2));

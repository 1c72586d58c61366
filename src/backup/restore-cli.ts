/**
 * `npm run restore -- [--database-url <url>] <file>`: puts a backup (from `npm run backup` or
 * `GET /backup`, of either store) back. The file is checked first (a regular file, an intact
 * netkeep database, a schema not newer than this netkeep).
 *
 * - Into a STOPPED server's $DATA_DIR (the default): the database it replaces is kept as
 *   netkeep.db.before-restore-<UTC time>; then the migrations run and the counts are printed.
 * - Into an EMPTY PostgreSQL database (`--database-url`, or DATABASE_URL in the environment):
 *   the file is copied aside and brought to this netkeep's schema (the backup itself is never
 *   written), then copied in with migrate-store's copy, and what was restored is printed. A
 *   database that holds netkeep data is refused; a restore of the same file that stopped half way
 *   is finished by running it again.
 *
 * Exit 2, changing nothing, when the server is running, the file is refused or the PostgreSQL
 * database is not empty; 1 when PostgreSQL cannot be reached or the counts differ after the copy.
 */
import { copyFileSync, existsSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError, loadConfig } from '../config.js';
import { isDomainError } from '../errors.js';
import { fileStamp } from '../store/backup.js';
import { copySummary } from '../store/postgres/copy.js';
import { restoreToPostgres } from '../store/postgres/restore.js';
import { parseStoreUrl, PostgresPool } from '../store/postgres/pool.js';
import {
  InUse,
  inspectBackup,
  migrateAndCount,
  NotABackup,
  takeOver,
  type BackupContents,
} from '../store/sqlite/backup.js';

const usage =
  'usage: npm run restore -- [--database-url <postgres://user:password@host:port/database>] <backup file>';

interface Arguments {
  readonly file: string;
  /** The PostgreSQL target; undefined: the SQLite store in DATA_DIR. */
  readonly databaseUrl: string | undefined;
}

function parseArguments(argv: readonly string[]): Arguments | string {
  let databaseUrl: string | undefined;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--database-url') {
      databaseUrl = argv[++i];
      if (databaseUrl === undefined || databaseUrl === '') return '--database-url needs a URL';
    } else if (arg.startsWith('-')) return `unknown option '${arg}'`;
    else rest.push(arg);
  }
  if (rest.length !== 1) return rest.length === 0 ? 'no backup file given' : 'give one backup file only';
  // DATABASE_URL names the store a server runs on: the restore goes where the server reads.
  databaseUrl ??= process.env.DATABASE_URL === '' ? undefined : process.env.DATABASE_URL;
  if (databaseUrl !== undefined) {
    try {
      parseStoreUrl(databaseUrl);
    } catch (err) {
      return `the PostgreSQL URL ${(err as Error).message}`;
    }
  }
  return { file: resolve(rest[0] ?? ''), databaseUrl };
}

const counted = (c: Omit<BackupContents, 'schemaVersion'>): string =>
  `${c.devices} devices, ${c.events} events, ${c.sessions} sessions`;

/** Into the stopped server's DATA_DIR, keeping the database it replaces. */
function restoreToSqlite(file: string): number {
  let dataDir: string;
  try {
    dataDir = loadConfig().DATA_DIR;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`netkeep restore: configuration error: ${err.message}\n`);
    return 2;
  }
  const target = join(dataDir, 'netkeep.db');
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
    `restored ${file} (schema ${contents.schemaVersion}) into ${target}: ${counted(counts)}\n` +
      (kept === undefined ? '' : `the database it replaced is kept as ${kept}\n`),
  );
  return 0;
}

/** Into an empty PostgreSQL database, with migrate-store's copy. */
async function restoreIntoPostgres(file: string, url: string): Promise<number> {
  const store = new PostgresPool(url, { max: 2 });
  const target = `PostgreSQL at ${store.address.label}`;
  try {
    const { contents, copy } = await restoreToPostgres(file, store, {
      onProgress: (p) => {
        process.stderr.write(`netkeep restore: ${p.table} ${p.done}/${p.total}\n`);
      },
    });
    process.stdout.write(
      `restored ${file} (schema ${contents.schemaVersion}) into ${target}: ${counted(contents)}\n` +
        `${copySummary(copy, file, target)}\n`,
    );
    return copy.countMismatches.length > 0 ? 1 : 0;
  } catch (err) {
    if (!isDomainError(err)) throw err;
    const message = store.scrub(err.message);
    if (err.kind === 'invalid' || err.kind === 'conflict') {
      process.stderr.write(`netkeep restore: refused, nothing was changed: ${message}\n`);
      return 2;
    }
    process.stderr.write(`netkeep restore: failed: ${message}\n`);
    return 1;
  } finally {
    await store.close();
  }
}

async function main(argv: readonly string[]): Promise<number> {
  const args = parseArguments(argv);
  if (typeof args === 'string') {
    process.stderr.write(`netkeep restore: ${args}\n${usage}\n`);
    return 2;
  }
  try {
    return args.databaseUrl === undefined
      ? restoreToSqlite(args.file)
      : await restoreIntoPostgres(args.file, args.databaseUrl);
  } catch (err) {
    if (!(err instanceof NotABackup) && !(err instanceof InUse)) throw err;
    process.stderr.write(`netkeep restore: ${err.message}; nothing was changed\n`);
    return 2;
  }
}

process.exitCode = await main(process.argv.slice(2));

/**
 * `npm run migrate-store -- [--batch <rows>] <postgres url>`: copies $DATA_DIR/netkeep.db into an
 * empty PostgreSQL database (or finishes a copy an earlier run began); see copy.ts. Progress goes
 * to stderr, the summary to stdout. The password of the URL is printed nowhere. Exit 0 when the
 * copy is complete, 2 for bad arguments or a refused source or target (nothing written), 1 for
 * anything else (the target unreachable, counts that differ after the copy).
 */
import { existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ConfigError, loadConfig } from '../../config.js';
import { isDomainError } from '../../errors.js';
import { copySqliteToPostgres, copySummary } from './copy.js';
import { parseStoreUrl, PostgresPool, redactStoreUrl } from './pool.js';

const usage =
  'usage: npm run migrate-store -- [--batch <rows>] <postgres://user:password@host:port/database>';

class UsageError extends Error {}

interface Arguments {
  readonly url: string;
  readonly batchSize: number | undefined;
}

function parseArguments(argv: readonly string[]): Arguments {
  let batchSize: number | undefined;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--batch') {
      const value = argv[++i] ?? '';
      if (!/^[1-9][0-9]{0,5}$/.test(value)) throw new UsageError('--batch needs a row count (1-999999)');
      batchSize = Number(value);
    } else if (arg === '--help' || arg === '-h') throw new UsageError('');
    else if (arg.startsWith('-')) throw new UsageError(`unknown option '${arg}'`);
    else rest.push(arg);
  }
  if (rest.length !== 1)
    throw new UsageError(rest.length === 0 ? 'no PostgreSQL URL given' : 'give one URL only');
  const url = rest[0] ?? '';
  try {
    parseStoreUrl(url);
  } catch (err) {
    throw new UsageError(`the URL ${(err as Error).message}`);
  }
  return { url, batchSize };
}

async function main(argv: readonly string[]): Promise<number> {
  let args: Arguments;
  try {
    args = parseArguments(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    if (err.message !== '') process.stderr.write(`netkeep migrate-store: ${err.message}\n`);
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  let source: string;
  try {
    source = join(loadConfig().DATA_DIR, 'netkeep.db');
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`netkeep migrate-store: configuration error: ${err.message}\n`);
    return 2;
  }
  if (!existsSync(source)) {
    process.stderr.write(
      `netkeep migrate-store: ${source} does not exist (set DATA_DIR to the SQLite store's directory)\n`,
    );
    return 2;
  }
  source = realpathSync(source);
  const sqlite = new Database(source, { readonly: true, fileMustExist: true });
  const store = new PostgresPool(args.url, { max: 2 });
  const target = `PostgreSQL at ${store.address.label}`;
  try {
    const report = await copySqliteToPostgres(sqlite, store, {
      sourceId: source,
      batchSize: args.batchSize,
      onProgress: (p) => {
        process.stderr.write(`netkeep migrate-store: ${p.table} ${p.done}/${p.total}\n`);
      },
    });
    process.stdout.write(`${copySummary(report, source, target)}\n`);
    return report.countMismatches.length > 0 ? 1 : 0;
  } catch (err) {
    const message = store.scrub(err instanceof Error ? err.message : String(err));
    if (isDomainError(err) && (err.kind === 'invalid' || err.kind === 'conflict')) {
      process.stderr.write(`netkeep migrate-store: refused, nothing was copied: ${message}\n`);
      return 2;
    }
    if (isDomainError(err)) {
      process.stderr.write(`netkeep migrate-store: failed: ${message}\n`);
      return 1;
    }
    const stack = err instanceof Error ? (err.stack ?? '') : '';
    process.stderr.write(
      `netkeep migrate-store: failed (${redactStoreUrl(args.url)}): ${store.scrub(stack || message)}\n`,
    );
    return 1;
  } finally {
    sqlite.close();
    await store.close();
  }
}

process.exitCode = await main(process.argv.slice(2));

/**
 * `npm run import -- [--dry-run] [--timezone <IANA zone>] <path>`: imports a NetAlertX or Pi.Alert
 * database into $DATA_DIR/netkeep.db. Each row it skips and each value it refuses is printed as it
 * is met (stdout), progress goes to stderr, and a summary ends the run. Exit 0 when the import ran
 * (skipped rows included), 2 for bad arguments or an unreadable source, 1 for anything else.
 *
 * It writes a SQLite store only: with DATABASE_URL set (the servers run on PostgreSQL) it refuses,
 * exit 2, before it reads anything, rather than fill a DATA_DIR file no server reads. The way there
 * is an import into SQLite, then `npm run migrate-store` (docs/postgresql.md).
 */
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../config.js';
import { isDomainError } from '../errors.js';
import { importDatabase, type ImportReport, type TableCounts } from '../store/sqlite/import/importer.js';

const usage = 'usage: npm run import -- [--dry-run] [--timezone <IANA zone>] <path of app.db or pialert.db>';

interface Arguments {
  readonly dryRun: boolean;
  readonly timeZone: string | undefined;
  readonly path: string;
}

class UsageError extends Error {}

export function parseArguments(argv: readonly string[]): Arguments {
  let dryRun = false;
  let timeZone: string | undefined;
  const paths: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--dry-run') dryRun = true;
    else if (arg === '--timezone' || arg === '--tz') {
      timeZone = argv[++i];
      if (timeZone === undefined) throw new UsageError('--timezone needs a zone name, e.g. Europe/Berlin');
    } else if (arg.startsWith('--timezone=')) timeZone = arg.slice('--timezone='.length);
    else if (arg === '--help' || arg === '-h') throw new UsageError('');
    else if (arg.startsWith('-') && arg !== '-') throw new UsageError(`unknown option '${arg}'`);
    else paths.push(arg);
  }
  if (paths.length !== 1)
    throw new UsageError(paths.length === 0 ? 'no database path given' : 'give one path only');
  return { dryRun, timeZone, path: paths[0] ?? '' };
}

function line(name: string, c: TableCounts, dryRun: boolean): string {
  const verb = dryRun ? 'would add' : 'added';
  const updated = name === 'devices' ? `, ${c.updated} ${dryRun ? 'would be filled in' : 'filled in'}` : '';
  return `  ${name.padEnd(8)} read ${c.read}: ${verb} ${c.inserted}${updated}, already present ${c.present}, skipped ${c.skipped}`;
}

export function summary(report: ImportReport): string {
  const lines = [
    `${report.dryRun ? 'Dry run (nothing was changed)' : 'Imported'}: ${report.source} (${report.kind === 'netalertx' ? 'NetAlertX' : 'Pi.Alert'})`,
    ...(report.fromSnapshot
      ? ['  read from a copy of it (it is in WAL mode): nothing is created beside it']
      : []),
    report.timeZoneFrom === 'utc'
      ? `  times read as UTC, as stored: ${report.utcBecause ?? 'the source stores UTC'} (--timezone overrides)`
      : `  times read as ${report.timeZone} (${report.timeZoneFrom === 'option' ? '--timezone' : report.timeZoneFrom === 'source' ? "the source's TIMEZONE setting" : "this machine's zone"}) and stored as UTC`,
    line('devices', report.devices, report.dryRun),
    line('events', report.events, report.dryRun),
    line('sessions', report.sessions, report.dryRun),
    ...report.warnings.map((w) => `  warning: ${w}`),
  ];
  const skipped = report.devices.skipped + report.events.skipped + report.sessions.skipped;
  if (skipped > 0) lines.push(`  ${skipped} rows skipped: each is listed above with its reason`);
  if (report.notes.length > 0) lines.push('  refused values took their defaults: each is listed above');
  return lines.join('\n');
}

export function main(argv: readonly string[]): number {
  let args: Arguments;
  try {
    args = parseArguments(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      if (err.message !== '') process.stderr.write(`netkeep import: ${err.message}\n`);
      process.stderr.write(`${usage}\n`);
      return 2;
    }
    throw err;
  }
  try {
    const config = loadConfig();
    if (config.DATABASE_URL !== '') {
      process.stderr.write(
        'netkeep import: DATABASE_URL is set, but the import writes only a SQLite store (DATA_DIR), ' +
          'not PostgreSQL. Run it without DATABASE_URL into a SQLite DATA_DIR, then copy that store ' +
          "into PostgreSQL with 'npm run migrate-store -- <url>' (docs/postgresql.md).\n",
      );
      return 2;
    }
    const target = join(config.DATA_DIR, 'netkeep.db');
    const report = importDatabase({
      source: args.path,
      target,
      dryRun: args.dryRun,
      timeZone: args.timeZone,
      historyDays: config.HISTORY_DAYS,
      onSkip: (row) => {
        process.stdout.write(`skipped ${row.table} row ${row.rowid} (${row.mac}): ${row.reason}\n`);
      },
      onNote: (note) => {
        process.stdout.write(`device ${note.mac} (Devices row ${note.rowid}): ${note.note}\n`);
      },
      onProgress: (p) => {
        process.stderr.write(`netkeep import: ${p.table} ${p.done}/${p.total}\n`);
      },
    });
    process.stdout.write(`${summary(report)}\n  into ${target}\n`);
    return 0;
  } catch (err) {
    if (err instanceof ConfigError || (isDomainError(err) && err.kind === 'invalid')) {
      process.stderr.write(`netkeep import: ${err.message}\n`);
      return 2;
    }
    // Anything the importer could say in a sentence (the target failing) is said without a stack.
    if (isDomainError(err)) {
      process.stderr.write(`netkeep import: failed: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(
      `netkeep import: failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    return 1;
  }
}

process.exitCode = main(process.argv.slice(2));

/**
 * `npm run backup -- [<file>]`: a consistent copy of $DATA_DIR/netkeep.db made with SQLite's online
 * backup API while the server keeps running (readers and the writer are not stopped; pages written
 * during the copy are copied again). Default file: $DATA_DIR/backups/netkeep-<UTC time>.db.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ConfigError, loadConfig } from '../config.js';
import { fileStamp } from '../store/backup.js';
import { backupFile } from '../store/sqlite/backup.js';

async function main(argv: readonly string[]): Promise<number> {
  if (argv.length > 1 || argv[0]?.startsWith('-')) {
    process.stderr.write('usage: npm run backup -- [<backup file>]\n');
    return 2;
  }
  let dataDir: string;
  try {
    dataDir = loadConfig().DATA_DIR;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`netkeep backup: configuration error: ${err.message}\n`);
    return 2;
  }
  const source = join(dataDir, 'netkeep.db');
  const target = resolve(argv[0] ?? join(dataDir, 'backups', `netkeep-${fileStamp()}.db`));
  if (!existsSync(source)) {
    process.stderr.write(`netkeep backup: ${source} does not exist (is DATA_DIR right?)\n`);
    return 2;
  }
  if (existsSync(target)) {
    process.stderr.write(`netkeep backup: ${target} exists; not overwriting it\n`);
    return 2;
  }
  mkdirSync(dirname(target), { recursive: true });
  await backupFile(source, target);
  process.stdout.write(`${target}\n`);
  return 0;
}

process.exitCode = await main(process.argv.slice(2));

/**
 * GET /backup on PostgreSQL (`BackupStore`, ../backup.ts): the same tables as `migrate-store`
 * reads, from one snapshot of the database, written as a SQLite file at this netkeep's schema
 * (copy.ts). The file is what a SQLite server's backup is: `npm run restore` puts it back into a
 * SQLite DATA_DIR or into an empty PostgreSQL database.
 */
import type { BackupStore } from '../backup.js';
import { copyPostgresToSqlite } from './copy.js';
import type { PostgresPool } from './pool.js';

export class PostgresBackupStore implements BackupStore {
  constructor(private readonly store: PostgresPool) {}

  async snapshot(target: string): Promise<void> {
    await copyPostgresToSqlite(this.store, target);
  }
}

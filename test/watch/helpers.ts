/** Shared bits of the security watch's tests. */
import { join } from 'node:path';
import Database from 'better-sqlite3';

/** The events of `type` in the server's database, oldest first (read-only, beside the server). */
export function watchEvents(dataDir: string, type: string): { mac: string; info: string }[] {
  const db = new Database(join(dataDir, 'netkeep.db'), { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare<[string], { mac: string; info: string }>(
        'SELECT eve_MAC AS mac, eve_AdditionalInfo AS info FROM Events WHERE eve_EventType = ? ORDER BY rowid',
      )
      .all(type);
  } finally {
    db.close();
  }
}

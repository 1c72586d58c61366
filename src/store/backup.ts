/**
 * Backups of the store made by the running server (GET /backup). SQLite: sqlite/backup.ts (SQLite's
 * online backup API; `npm run backup` and `npm run restore` use that file directly).
 */
export interface BackupStore {
  /** Writes a consistent copy of the store to `target` (a new file) while writes go on. */
  snapshot(target: string): Promise<void>;
}

/** A UTC stamp for file names: 20261126-133600. */
export function fileStamp(at = new Date()): string {
  return at.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
}

/**
 * Which devices' answers may have changed, for the caches and the kept counts (each with a reader
 * of its own). TEMP triggers report every device this connection's writes touch, whoever on the
 * connection writes; `PRAGMA data_version` reveals commits by other processes (then every reader
 * is told "everything"). A commit probe reads the WAL-index header first (db/commit-probe.ts): when
 * nobody committed since the last look, no SQL runs at all.
 */
import type { Database, Statement } from 'better-sqlite3';
import { CommitProbe } from '../../db/commit-probe.js';
import type { ChangeReader, Changes } from '../devices.js';
import { changedDeviceFunction, changeTrackingSql, dataVersionSql } from './device-sql.js';

/** What one change reader has not polled yet. */
interface ReaderState {
  pending: Set<string> | 'all';
}

const nothingChanged: ReadonlySet<string> = new Set();

export class ChangeTracking {
  private readonly dataVersionStmt: Statement<[], number>;
  /** Asked before `dataVersionStmt`: whether any commit happened at all (see commit-probe.ts). */
  private readonly commitProbe: CommitProbe;
  /** Devices whose answers this connection's writes changed, not yet handed to the readers. */
  private changedHere = new Set<string>();
  /** Every change reader, each with what it has not polled yet. */
  private readonly readers = new Set<ReaderState>();
  private dataVersion: number;

  constructor(db: Database) {
    db.function(changedDeviceFunction, { deterministic: false }, (mac: unknown) => {
      if (typeof mac === 'string') this.changedHere.add(mac);
      return null;
    });
    db.exec(changeTrackingSql);
    this.commitProbe = new CommitProbe(db);
    this.commitProbe.mayHaveChanged();
    this.dataVersionStmt = db.prepare<[], number>(dataVersionSql).pluck();
    this.dataVersion = this.dataVersionStmt.get() ?? 0;
  }

  /** A new reader; it starts with nothing changed. */
  reader(): ChangeReader {
    const state: ReaderState = { pending: new Set() };
    this.readers.add(state);
    return {
      poll: (): Changes => {
        this.collect();
        const pending = state.pending;
        if (pending !== 'all' && pending.size === 0) return nothingChanged;
        state.pending = new Set();
        return pending;
      },
    };
  }

  /**
   * Hands what changed to every reader. The TEMP triggers of `changeTrackingSql` report every
   * device this connection's writes touch; `PRAGMA data_version` moves with every commit by another
   * connection (another process, the sqlite3 CLI), whose rows nothing here can name: then
   * everything may have changed. The commit probe is asked first, so that when nobody committed,
   * the usual case on a read, this costs one small read of the WAL-index and no statement.
   */
  private collect(): void {
    if (!this.commitProbe.mayHaveChanged()) return;
    let version: number;
    try {
      version = this.dataVersionStmt.get() ?? 0;
    } catch (error) {
      // The probe has already taken in the new header: without this, the next poll would see no
      // change and a foreign commit would never be noticed.
      this.commitProbe.forget();
      throw error;
    }
    const changed = this.changedHere;
    if (changed.size > 0) this.changedHere = new Set();
    if (version !== this.dataVersion) {
      this.dataVersion = version;
      for (const reader of this.readers) reader.pending = 'all';
      return;
    }
    if (changed.size === 0) return;
    for (const reader of this.readers) {
      const pending = reader.pending;
      if (pending === 'all') continue;
      if (pending.size === 0) reader.pending = new Set(changed);
      else for (const mac of changed) pending.add(mac);
    }
  }
}

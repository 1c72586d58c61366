/**
 * Which devices' answers may have changed, for the caches and the kept counts (each with a reader
 * of its own). TEMP triggers report every device this connection's writes touch, whoever on the
 * connection writes; `PRAGMA data_version` reveals commits by other connections, whose devices the
 * change log names (netkeep_change_log, written by persistent triggers in whichever process
 * writes: migration "The change log"). A commit probe reads the WAL-index header first
 * (db/commit-probe.ts): when nobody committed since the last look, no SQL runs at all.
 */
import type { Database, Statement } from 'better-sqlite3';
import { CommitProbe } from '../../db/commit-probe.js';
import { ChangeReaders, noneSeen, seenValue } from '../change-readers.js';
import type { ChangeReader } from '../devices.js';
import {
  changedDeviceFunction,
  changeLogSql,
  changeTrackingSql,
  dataVersionSql,
  seenDeviceFunction,
} from './device-sql.js';

export class ChangeTracking {
  private readonly dataVersionStmt: Statement<[], number>;
  private readonly logBoundsStmt: Statement<[], [number | null, number | null]>;
  private readonly logDevicesStmt: Statement<[number, number], [unknown, unknown, number, number]>;
  private readonly readLog: () => void;
  private readonly holdStmt: Statement<[]>;
  private readonly releaseStmt: Statement<[]>;
  private readonly appendStmt: Statement<[string, string | null]>;
  /** The id of the last change-log row taken in (0: none yet). */
  private logId: number;
  /** Asked before `dataVersionStmt`: whether any commit happened at all (see commit-probe.ts). */
  private readonly commitProbe: CommitProbe;
  /** Devices whose answers this connection's writes changed, not yet handed to the readers. */
  private changedHere = new Set<string>();
  /**
   * Devices whose only change by this connection was devLastConnection: its latest value, as
   * stored (the change log's form; converted when handed to the readers).
   */
  private seenHere = new Map<string, string>();
  /** Every change reader, each with what it has not polled yet. */
  private readonly readers = new ChangeReaders();
  private dataVersion: number;
  /** The look that callers of `lookShared` wait for; undefined when none is pending. */
  private sharedLook: Promise<void> | undefined;

  constructor(private readonly db: Database) {
    db.function(changedDeviceFunction, { deterministic: false }, (mac: unknown) => {
      if (typeof mac === 'string') this.changedHere.add(mac);
      return null;
    });
    db.function(seenDeviceFunction, { deterministic: false }, (mac: unknown, value: unknown) => {
      if (typeof mac !== 'string') return null;
      if (typeof value === 'string') this.seenHere.set(mac, value);
      else this.changedHere.add(mac);
      return null;
    });
    db.exec(changeTrackingSql);
    this.commitProbe = new CommitProbe(db);
    this.commitProbe.mayHaveChanged();
    this.dataVersionStmt = db.prepare<[], number>(dataVersionSql).pluck();
    this.dataVersion = this.dataVersionStmt.get() ?? 0;
    this.logBoundsStmt = db.prepare<[], [number | null, number | null]>(changeLogSql.bounds).raw();
    this.logDevicesStmt = db
      .prepare<[number, number], [unknown, unknown, number, number]>(changeLogSql.devicesAfter)
      .raw();
    this.logId = this.logBoundsStmt.get()?.[1] ?? 0;
    this.holdStmt = db.prepare<[]>(changeLogSql.hold);
    this.releaseStmt = db.prepare<[]>(changeLogSql.release);
    this.appendStmt = db.prepare<[string, string | null]>(changeLogSql.append);
    // The bounds and the rows from one snapshot.
    const readLog = db.transaction(() => {
      this.takeLog();
    });
    this.readLog = () => {
      readLog.deferred();
    };
  }

  /**
   * Runs `write` inside the caller's transaction with the change log held, then appends one row per
   * device it changed, as the log's triggers would have named it (this connection's TEMP triggers
   * mirror them): a change, or only a new devLastConnection with its value. For writes that touch
   * a device in several tables, a scan cycle above all (~19,000 rows for ~6,000 devices).
   */
  logOnce<T>(write: () => T): T {
    if (!this.db.inTransaction) throw new Error('logOnce runs inside a transaction');
    // What this connection changed before goes to the readers now, so that what the TEMP triggers
    // report next is this write's alone.
    this.handOwn();
    // Released in the same transaction, whatever happens: no other writer ever finds it held.
    this.holdStmt.run();
    try {
      return write();
    } finally {
      this.releaseStmt.run();
      for (const mac of this.changedHere) this.appendStmt.run(mac, null);
      for (const [mac, value] of this.seenHere)
        if (!this.changedHere.has(mac)) this.appendStmt.run(mac, value);
    }
  }

  /** A new reader; it starts with nothing changed. */
  reader(): ChangeReader {
    return this.readers.reader({
      now: () => {
        this.collect();
      },
      shared: () => this.lookShared(),
    });
  }

  /**
   * One look (`collect`) in the check phase of this turn of the event loop, shared by every caller
   * until then: the requests of a busy turn wait for one read of the WAL-index instead of making
   * one each (under load that read took about a fifth of a cached GET,
   * docs/benchmarks-history.md). Still exact: each caller asked before the look was made, and a
   * request has reached the server before its handler asks, so a commit the look misses was made
   * after the request was sent.
   */
  private lookShared(): Promise<void> {
    this.sharedLook ??= new Promise((resolve, reject) => {
      setImmediate(() => {
        this.sharedLook = undefined;
        try {
          this.collect();
          resolve();
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
    });
    return this.sharedLook;
  }

  /**
   * Hands what changed to every reader. The TEMP triggers of `changeTrackingSql` report every
   * device this connection's writes touch; `PRAGMA data_version` moves with every commit by another
   * connection (another process, the sqlite3 CLI), whose devices the change log names. The commit
   * probe is asked first, so that when nobody committed, the usual case on a read, this costs one
   * small read of the WAL-index and no statement.
   */
  private collect(): void {
    if (!this.commitProbe.mayHaveChanged()) return;
    const inTransaction = this.db.inTransaction;
    let version: number;
    let tookLog = false;
    try {
      // Read before the version: when the version has not moved, no other connection had
      // committed by then, so every row up to this id is this connection's own (committed: no
      // transaction is open), already reported by the TEMP triggers.
      const ownUpTo =
        (this.changedHere.size > 0 || this.seenHere.size > 0) && !inTransaction
          ? (this.logBoundsStmt.get()?.[1] ?? 0)
          : 0;
      version = this.dataVersionStmt.get() ?? 0;
      if (version === this.dataVersion) this.logId = Math.max(this.logId, ownUpTo);
      else if (inTransaction) {
        // This connection's own uncommitted rows are in the log too (their ids may be reused if
        // they roll back): it is read once no transaction is open; meanwhile, everything.
        this.readers.everything();
        version = this.dataVersion;
      } else {
        this.readLog();
        tookLog = true;
      }
    } catch (error) {
      // The probe has already taken in the new header: without this, the next poll would see no
      // change and a foreign commit would never be noticed.
      this.commitProbe.forget();
      throw error;
    }
    this.dataVersion = version;
    // The log just read holds this connection's committed writes too, in commit order with the
    // other connections': a 'seen' value of its own, handed after them, could be older than one
    // of theirs (and one the log lacks changed nothing). A full change wins whatever its order.
    this.handOwn(tookLog);
  }

  /**
   * Hands what this connection's TEMP triggers reported to every reader (its 'seen' values too,
   * unless `withoutSeen`), and starts over.
   */
  private handOwn(withoutSeen = false): void {
    const changed = this.changedHere;
    const seen = this.seenHere;
    if (changed.size > 0) this.changedHere = new Set();
    if (seen.size > 0) this.seenHere = new Map();
    const ownSeen =
      withoutSeen || seen.size === 0
        ? noneSeen
        : new Map([...seen].map(([mac, value]) => [mac, seenValue(value)] as const));
    if (changed.size > 0 || ownSeen.size > 0) this.readers.changed(changed, ownSeen);
  }

  /**
   * The change-log rows after the last one taken in (in a read transaction). Everything may have
   * changed when rows this reader had not read are gone: pruned (it fell more than the log's
   * length behind), or the log is older than what it read (the file was replaced, e.g. restored
   * from a backup while the server ran).
   */
  private takeLog(): void {
    const [low, high] = this.logBoundsStmt.get() ?? [null, null];
    if (high === null || low === null) {
      if (this.logId > 0) this.everything(0);
      return;
    }
    if (high < this.logId || low > this.logId + 1) {
      this.everything(high);
      return;
    }
    if (high === this.logId) return;
    const full = new Set<string>();
    const seen = new Map<string, string>();
    // One row per device, grouped by SQLite: a scan cycle writes ~19,000 rows for ~6,000 devices,
    // and the event loop waits while they are read (about 29 ms against 40 for iterating them all
    // in JS, docs/benchmarks-history.md).
    for (const [mac, value, fullRows] of this.logDevicesStmt.all(this.logId, high)) {
      if (typeof mac !== 'string') continue;
      if (fullRows === 0 && typeof value === 'string') seen.set(mac, seenValue(value));
      else full.add(mac);
    }
    this.logId = high;
    this.readers.changed(full, seen);
  }

  /** Every reader is told that everything changed; the log is read from `id` on. */
  private everything(id: number): void {
    this.logId = id;
    this.readers.everything();
  }
}

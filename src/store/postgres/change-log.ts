/**
 * The other servers' writes, read from the change log (netkeep_change_log, filled by the change
 * triggers in the writing transaction: a row exists exactly when its write committed).
 *
 * Why a log and not a NOTIFY per write: a NOTIFY holds a database-wide lock from its transaction's
 * commit until the commit is on disk, so every writing transaction of every server committed (and
 * waited for its fsync) one after the other, and PostgreSQL's group commit could not share one.
 *
 * Reading: each read runs in one REPEATABLE READ snapshot and takes the rows whose transaction id
 * is at or above the xmin of the previous read's snapshot. Every transaction not visible then was
 * in progress (xid >= xmin) or had no id yet (it gets a larger one), so no committed row is ever
 * skipped, whatever order the transactions commit in; a row read twice is recognised by its id.
 * A read happens on a hint (a NOTIFY the writing server sends after its commits, coalesced: one in
 * flight at a time, not durable, outside the write path) and on a timer (`pollMs`): a hint lost
 * (its sender died between its commit and the hint, or the listener was reconnecting) delays a
 * change by `pollMs` at most, never forever.
 *
 * Pruning: a server deletes the rows of transactions that ended before a snapshot it took at least
 * `retentionMs` ago. A server that could not read for half of that (the store was down) may have
 * lost rows: it reports everything as changed.
 */
import { seenChanges, type PostgresPool, type StoreLog } from './pool.js';

export interface ChangeLogOptions {
  /** This server's id: its own rows are not reported again (its pool reports its commits exactly). */
  readonly serverId: string;
  /** The devices other servers' statements changed, and those only seen again (change-readers.ts). */
  readonly onChanged: (macs: readonly string[], seen: ReadonlyMap<string, string>) => void;
  /** Anything may have changed (rows may have been pruned unread). */
  readonly onEverything: () => void;
  /** Sends the hint (notify.ts) that makes the other servers read now. */
  readonly sendHint: () => Promise<void>;
  readonly log?: StoreLog;
  /** How often the log is read without a hint (default 1 s). */
  readonly pollMs?: number;
  /** How long rows are kept (default 5 min). */
  readonly retentionMs?: number;
}

interface LogRow {
  id: number;
  xid: string;
  server: string;
  macs: string[];
  /** Devices only seen again: MAC -> stored devLastConnection (null: none). */
  seen: unknown;
}

/** Every device a log row names, changed or only seen again. */
function macsOf(row: LogRow): string[] {
  return typeof row.seen === 'object' && row.seen !== null
    ? [...row.macs, ...Object.keys(row.seen)]
    : row.macs;
}

export class PostgresChangeLog {
  /** The xmin of the previous read's snapshot (undefined before the first). */
  private horizon: bigint | undefined;
  /** Rows already read at or above the horizon (they are read again until it passes them). */
  private readonly seen = new Map<number, bigint>();
  private lastRead = Date.now();
  /** Horizons of past reads, oldest first, for pruning: [time, xmin]. */
  private readonly past: [number, bigint][] = [];
  private lastPrune = Date.now();
  private reading: Promise<void> | undefined;
  private readAgain = false;
  private hinting = false;
  private hintAgain = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly pollMs: number;
  private readonly retentionMs: number;

  constructor(
    private readonly pool: PostgresPool,
    private readonly options: ChangeLogOptions,
  ) {
    this.pollMs = options.pollMs ?? 1000;
    this.retentionMs = options.retentionMs ?? 5 * 60_000;
  }

  /** Takes the starting horizon (what was committed before is not reported) and starts the timer. */
  async start(): Promise<void> {
    await this.read();
    this.timer = setInterval(() => {
      void this.read().catch(() => undefined);
    }, this.pollMs);
    this.timer.unref();
  }

  /**
   * Reads the rows committed since the previous read and reports the other servers' devices.
   * Concurrent calls share a read, and one more runs after it (a hint during a read is not lost).
   */
  read(): Promise<void> {
    if (this.reading !== undefined) {
      this.readAgain = true;
      return this.reading;
    }
    const run = async (): Promise<void> => {
      try {
        do {
          this.readAgain = false;
          await this.readOnce();
        } while (this.wantsAnotherRead());
      } finally {
        this.reading = undefined;
      }
    };
    this.reading = run();
    return this.reading;
  }

  /** A read was asked for while one ran (a method: the flag changes across the awaits). */
  private wantsAnotherRead(): boolean {
    return this.readAgain && !this.stopped;
  }

  private async readOnce(): Promise<void> {
    if (this.stopped) return;
    const started = Date.now();
    const horizon = this.horizon;
    const { xmin, rows } = await this.pool.transaction(async (client) => {
      const snapshot = await client.query<{ xmin: string }>(
        'SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin',
      );
      const found =
        horizon === undefined
          ? []
          : (
              await client.query<LogRow>(
                // In id order: two writes of one device are in the order they committed (the
                // second waited for the first's row lock), so its last seen value comes last.
                'SELECT id, xid::text AS xid, server, macs, seen FROM netkeep_change_log WHERE xid >= $1::text::xid8 ORDER BY id',
                [horizon.toString()],
              )
            ).rows;
      return { xmin: BigInt(snapshot.rows[0]?.xmin ?? '0'), rows: found };
    }, 'snapshot');
    if (horizon !== undefined && started - this.lastRead > this.retentionMs / 2) {
      // Rows may have been pruned since the last read: anything may have changed.
      this.options.onEverything();
    }
    const macs = new Set<string>();
    const moved = new Map<string, string>();
    for (const row of rows) {
      if (this.seen.has(row.id)) continue;
      this.seen.set(row.id, BigInt(row.xid));
      if (row.server === this.options.serverId) {
        // This server handed its own commits as they settled. Another server's 'seen' value read
        // before one of its rows is older (the rows of one device are in commit order, see the
        // query): handed now, after this server's newer value, it would win.
        if (moved.size > 0) for (const mac of macsOf(row)) moved.delete(mac);
        continue;
      }
      const changes = seenChanges([...row.macs], row.seen);
      for (const mac of changes.macs) {
        macs.add(mac);
        moved.delete(mac);
      }
      for (const [mac, value] of changes.seen) if (!macs.has(mac)) moved.set(mac, value);
    }
    // Rows below the new horizon are not read again.
    for (const [id, xid] of this.seen) if (xid < xmin) this.seen.delete(id);
    this.horizon = xmin;
    this.lastRead = started;
    if (macs.size > 0 || moved.size > 0) this.options.onChanged([...macs], moved);
    this.past.push([started, xmin]);
    await this.prune(started);
  }

  /** Deletes the rows of transactions that ended before a snapshot taken `retentionMs` ago. */
  private async prune(now: number): Promise<void> {
    let below: bigint | undefined;
    while (this.past.length > 0 && (this.past[0]?.[0] ?? now) <= now - this.retentionMs) {
      below = this.past.shift()?.[1];
    }
    if (below === undefined || now - this.lastPrune < this.retentionMs / 10) return;
    this.lastPrune = now;
    await this.pool.query('DELETE FROM netkeep_change_log WHERE xid < $1::text::xid8', [below.toString()]);
  }

  /**
   * This server committed a change: hint the others. One hint in flight at a time; commits during
   * it send one more after it (the others' read then covers all of them).
   */
  committed(): void {
    if (this.stopped) return;
    if (this.hinting) {
      this.hintAgain = true;
      return;
    }
    this.hinting = true;
    this.hintAgain = false;
    this.options.sendHint().then(
      () => {
        this.hinting = false;
        if (this.hintAgain) this.committed();
      },
      (err: unknown) => {
        // The others read on their timer: a lost hint only delays them.
        this.hinting = false;
        this.options.log?.warn(
          { store: this.pool.address.label, err: this.pool.scrub(String(err)) },
          'PostgreSQL change hint not sent',
        );
      },
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.reading?.catch(() => undefined);
  }
}

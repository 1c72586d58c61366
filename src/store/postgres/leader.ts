/**
 * At most one server does a job at a time (the scan loop's writes of a site): a
 * PostgreSQL session advisory lock, held on a connection of its own. The server that holds it
 * works; the others stand by and try again each round. The lock belongs to the connection, so a
 * server that dies (or loses the database) frees it without anyone's help, and the holder learns
 * it lost it (`onLost`) when its connection ends.
 */
import type pg from 'pg';
import type { PostgresPool, StoreLog } from './pool.js';

export interface LeaderLockOptions {
  /** Called once when a held lock is lost (its connection ended). */
  readonly onLost?: () => void;
  readonly log?: StoreLog;
}

export class PostgresLeaderLock {
  private client: pg.Client | undefined;
  private holding = false;

  /** `name` identifies the job, e.g. `scan:<site>`; every server uses the same name for it. */
  constructor(
    private readonly store: PostgresPool,
    readonly name: string,
    private readonly options: LeaderLockOptions = {},
  ) {}

  /** Whether this server holds the lock (as far as it knows: see onLost). */
  get held(): boolean {
    return this.holding;
  }

  /**
   * Takes the lock when free; true when this server holds it (again). Never waits for another
   * holder. Rejects with STORE_UNAVAILABLE when the database cannot be reached.
   */
  async tryAcquire(): Promise<boolean> {
    if (this.holding) return true;
    const client = await this.connection();
    try {
      const { rows } = await client.query<{ locked: boolean }>(
        'SELECT pg_try_advisory_lock(hashtext($1)) AS locked',
        [`netkeep ${this.name}`],
      );
      this.holding = rows[0]?.locked === true;
      return this.holding;
    } catch (err) {
      throw this.store.translate(err);
    }
  }

  /** Gives the lock up (ends its connection, which frees it in every case). */
  async release(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.holding = false;
    if (client !== undefined) {
      client.removeAllListeners('end');
      client.on('error', () => undefined);
      await client.end().catch(() => undefined);
    }
  }

  private async connection(): Promise<pg.Client> {
    if (this.client !== undefined) return this.client;
    const client = this.store.dedicatedClient();
    const lost = (err?: Error): void => {
      if (this.client !== client) return;
      this.client = undefined;
      client.on('error', () => undefined);
      const wasHolding = this.holding;
      this.holding = false;
      if (wasHolding) {
        this.options.log?.warn(
          { store: this.store.address.label, lock: this.name, err: err && this.store.scrub(err.message) },
          'PostgreSQL advisory lock lost with its connection',
        );
        this.options.onLost?.();
      }
    };
    client.on('error', lost);
    client.on('end', () => {
      lost();
    });
    try {
      await client.connect();
    } catch (err) {
      client.removeAllListeners('end');
      client.on('error', () => undefined);
      await client.end().catch(() => undefined);
      throw this.store.translate(err);
    }
    this.client = client;
    return client;
  }
}

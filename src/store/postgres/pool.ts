/**
 * The PostgreSQL store's connection: a `pg` pool from a `postgres://user:password@host:port/db`
 * URL (`?sslmode=` as libpq reads it), the type parsers that make its answers look like SQLite's
 * (64-bit integers as numbers), and the one translation of the driver's failures: a store that
 * cannot be reached is `DomainError('unavailable')` with code STORE_UNAVAILABLE, naming the store
 * as host:port/db. The password is kept out of every message and log line: it is only in the
 * pool's configuration, and any driver text that would repeat it is scrubbed.
 */
import pg from 'pg';
import { DomainError } from '../../errors.js';
import { noneSeen, seenValue } from '../change-readers.js';
import { PgGroupCommit, type Combinable } from './group-commit.js';
import { migratePostgres } from './migrations.js';

/** What a URL says about the store, without the password. */
export interface StoreAddress {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly user: string;
  /** 'disable' (the default here, as for a loopback server), 'require', 'verify-ca', 'verify-full' */
  readonly sslmode: SslMode;
  /** `host:port/db`: how messages name the store. */
  readonly label: string;
}

const sslModes = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;
type SslMode = (typeof sslModes)[number];

export interface StoreConnection extends StoreAddress {
  readonly password: string;
}

/**
 * Reads a PostgreSQL URL. Throws a plain Error (a configuration mistake, shown at start) that
 * never repeats the password.
 */
export function parseStoreUrl(text: string): StoreConnection {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error('is not a URL (postgres://user:password@host:port/database)');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new Error(`has scheme '${url.protocol}'; use postgres://user:password@host:port/database`);
  }
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (url.hostname === '') throw new Error('names no host');
  if (database === '' || database.includes('/')) throw new Error('names no database (…/database at its end)');
  if (url.username === '') throw new Error('names no user (postgres://user:password@…)');
  let sslmode: SslMode = 'disable';
  for (const [key, value] of url.searchParams) {
    if (key !== 'sslmode') throw new Error(`has the parameter '${key}'; only sslmode is read`);
    if (!(sslModes as readonly string[]).includes(value)) {
      throw new Error(`has sslmode=${value}; use one of ${sslModes.join(', ')}`);
    }
    sslmode = value as SslMode;
  }
  const port = url.port === '' ? 5432 : Number(url.port);
  // An IPv6 literal comes as [::1]; pg wants it bare.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return {
    host,
    port,
    database,
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    sslmode,
    label: `${url.hostname}:${port}/${database}`,
  };
}

/** The URL with its password replaced by `****`, for messages and /settings. */
export function redactStoreUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.password !== '') url.password = '****';
    return url.toString();
  } catch {
    return '(not a URL)';
  }
}

/**
 * libpq's sslmode as TLS options: `require` encrypts without checking the certificate (as libpq
 * does), `verify-ca`/`verify-full` check it against the system's CAs (NODE_EXTRA_CA_CERTS adds
 * one). `prefer` is taken as `disable`: the pg driver does not fall back from TLS to plain.
 */
function tlsOptions(connection: StoreAddress): pg.ClientConfig['ssl'] {
  switch (connection.sslmode) {
    case 'disable':
    case 'prefer':
      return false;
    case 'require':
      return { rejectUnauthorized: false };
    case 'verify-ca':
      return { rejectUnauthorized: true, checkServerIdentity: () => undefined };
    case 'verify-full':
      return { rejectUnauthorized: true, servername: connection.host };
  }
}

/**
 * Answers in SQLite's shapes: BIGINT (int8) and the numeric of SUM() as numbers. netkeep's
 * integers (times in ms, counts, ids) stay far below 2^53.
 */
const types = new pg.TypeOverrides();
types.setTypeParser(pg.types.builtins.INT8, 'text', Number);
types.setTypeParser(pg.types.builtins.NUMERIC, 'text', Number);

/** Error codes (SQLSTATE classes) and socket errors that mean "the store cannot be reached". */
function isConnectionFailure(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    // 08: connection exception; 57P01-03: the server is shutting down or starting; 53300: too
    // many connections; 28: the login was refused; 3D000: no such database.
    if (/^(08|28)/.test(code) || ['57P01', '57P02', '57P03', '53300', '3D000'].includes(code)) return true;
    if (
      ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'EPIPE'].includes(
        code,
      )
    ) {
      return true;
    }
  }
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|does not support SSL|certificate/i.test(
    err.message,
  );
}

export interface StoreLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface PostgresPoolOptions {
  /** Connections kept at most (pg's default is 10). */
  readonly max?: number;
  /** How long a request waits for a connection before the store counts as unavailable. */
  readonly connectionTimeoutMs?: number;
  readonly log?: StoreLog;
  /**
   * This server's id among the servers of the database: its connections carry it (the setting
   * netkeep.server) so that the change triggers' messages name their sender (notify.ts).
   */
  readonly serverId?: string;
}

/**
 * Whether a statement may write (run by `query` in a transaction of its own when changes are
 * watched): INSERT, UPDATE, DELETE, MERGE, or a WITH that holds one of them; a read runs as it is.
 */
function mayWrite(text: string): boolean {
  if (/^\s*(INSERT|UPDATE|DELETE|MERGE)\b/i.test(text)) return true;
  return /^\s*WITH\b/i.test(text) && /\b(INSERT|UPDATE|DELETE|MERGE)\b/i.test(text);
}

/**
 * The pool of one PostgreSQL store. `query` and `transaction` turn a store that cannot be reached
 * into STORE_UNAVAILABLE; other errors (a constraint, a bug) pass through, scrubbed of the password.
 */
export class PostgresPool {
  readonly pool: pg.Pool;
  readonly address: StoreAddress;
  private readonly password: string;
  private readonly clientConfig: pg.ClientConfig;
  /** Told after each write through this pool (see `onWrite`). */
  private readonly writeListeners = new Set<() => void>();
  private readonly log: StoreLog | undefined;
  /**
   * Told, after each COMMIT, which devices the transaction changed (the change triggers collect
   * them in the transaction-local settings netkeep.changed and netkeep.seen): this server's change
   * tracking, so that its caches see its own writes before the write's promise settles.
   */
  onCommitted: ((changes: TransactionChanges) => void) | undefined;
  /** The API's small writes, several to a transaction (group-commit.ts). */
  private readonly groups = new PgGroupCommit({ transaction: (group) => this.transaction(group) });

  constructor(url: string, options: PostgresPoolOptions = {}) {
    const connection = parseStoreUrl(url);
    const { password, ...address } = connection;
    this.address = address;
    this.password = password;
    this.log = options.log;
    this.clientConfig = {
      host: connection.host,
      port: connection.port,
      database: connection.database,
      user: connection.user,
      password,
      ssl: tlsOptions(connection),
      connectionTimeoutMillis: options.connectionTimeoutMs ?? 5000,
      types,
      application_name: 'netkeep',
      // A uuid (or netkeep's own text): nothing in it needs quoting.
      ...(options.serverId === undefined ? {} : { options: `-c netkeep.server=${options.serverId}` }),
    };
    this.pool = new pg.Pool({ ...this.clientConfig, max: options.max ?? 10 });
    // An idle connection that the server drops emits 'error' on the pool; unhandled, it would end
    // the process. The next query opens a new connection (or reports the store unavailable).
    this.pool.on('error', (err) => {
      options.log?.warn(
        { store: this.address.label, err: this.scrub(err.message) },
        'PostgreSQL connection lost',
      );
    });
  }

  /** The error a caller sees: STORE_UNAVAILABLE for a store that cannot be reached, else `err`. */
  translate(err: unknown): unknown {
    if (err instanceof DomainError) return err;
    if (isConnectionFailure(err)) {
      const reason = this.scrub(err instanceof Error ? err.message : String(err));
      return new DomainError(
        'unavailable',
        `the store (PostgreSQL at ${this.address.label}) is unavailable: ${reason}`,
        {
          code: 'STORE_UNAVAILABLE',
          reason: 'Store unavailable',
        },
      );
    }
    if (err instanceof Error && this.password !== '' && err.message.includes(this.password)) {
      err.message = this.scrub(err.message);
    }
    return err;
  }

  /** `text` with the password (as given and URL-encoded) replaced by ****. */
  scrub(text: string): string {
    if (this.password === '') return text;
    return text.split(this.password).join('****').split(encodeURIComponent(this.password)).join('****');
  }

  async query<R extends pg.QueryResultRow>(text: string, values?: readonly unknown[]): Promise<R[]> {
    // A write outside a transaction: in one, so that what it changed is read before its COMMIT.
    if (this.onCommitted !== undefined && mayWrite(text)) {
      return this.transaction(async (client) => (await client.query<R>(text, values as unknown[])).rows);
    }
    let read = false;
    try {
      const result: pg.QueryResult<R> | pg.QueryResult<R>[] = await this.pool.query<R>(
        text,
        values as unknown[] | undefined,
      );
      // Several statements in one text answer with an array: taken as a write.
      read = !Array.isArray(result) && result.command === 'SELECT';
      return result.rows;
    } catch (err) {
      throw this.translate(err);
    } finally {
      if (!read) this.wrote();
    }
  }

  /**
   * Calls `listener` after each write through this pool: a `transaction` in write mode, or a
   * `query` that is not one SELECT, once it has ended (committed, or failed, which may have
   * committed too: told either way). What this process keeps in memory from the tables (the device
   * counts, postgres/counts.ts) is dropped then, so that its own writes are read back at once;
   * other servers' writes are told through NOTIFY instead. Returns the unsubscribe.
   */
  onWrite(listener: () => void): () => void {
    this.writeListeners.add(listener);
    return () => {
      this.writeListeners.delete(listener);
    };
  }

  private wrote(): void {
    for (const listener of this.writeListeners) listener();
  }

  /** A connection of the pool, for a caller that runs several statements on one (released by it). */
  async connect(): Promise<pg.PoolClient> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw this.translate(err);
    }
    // The pool listens for the errors of idle connections only: a connection lost while checked
    // out (the server stopped mid-transaction) emits 'error', which unhandled ends the process.
    // Its query in flight rejects as well, so the caller hears of it; this only keeps the process.
    const onError = (err: Error): void => {
      this.log?.warn(
        { store: this.address.label, err: this.scrub(err.message) },
        'PostgreSQL connection lost',
      );
    };
    client.on('error', onError);
    const release = client.release.bind(client);
    client.release = (err?: Error | boolean) => {
      client.removeListener('error', onError);
      client.release = release;
      release(err);
    };
    return client;
  }

  /** What to do once the transaction open on a connection has committed (`afterCommit`). */
  private readonly afterCommitOf = new WeakMap<pg.PoolClient, (() => void)[]>();

  /**
   * Calls `then` once the transaction `client` is in (one of `transaction`'s) has committed; never
   * when it rolls back. For what must not be seen before the commit: the alert outbox wakes its
   * delivery loop with it, whose reads on other connections would not see rows still uncommitted.
   */
  afterCommit(client: pg.PoolClient, then: () => void): void {
    const list = this.afterCommitOf.get(client);
    if (list === undefined) this.afterCommitOf.set(client, [then]);
    else list.push(then);
  }

  private runAfterCommit(client: pg.PoolClient): void {
    const list = this.afterCommitOf.get(client);
    if (list === undefined) return;
    this.afterCommitOf.delete(client);
    for (const then of list) then();
  }

  /**
   * Runs `work` in one transaction on one connection: COMMIT when it resolves, ROLLBACK when not.
   * `snapshot`: a read-only transaction that sees one snapshot throughout (REPEATABLE READ).
   */
  async transaction<T>(
    work: (client: pg.PoolClient) => Promise<T>,
    mode: 'write' | 'snapshot' = 'write',
  ): Promise<T> {
    const client = await this.connect();
    let broken = false;
    try {
      await client.query(mode === 'snapshot' ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' : 'BEGIN');
      const result = await work(client);
      const changed =
        mode === 'write' && this.onCommitted !== undefined ? await changedIn(client) : undefined;
      await client.query('COMMIT');
      if (changed !== undefined && (changed.macs.length > 0 || changed.seen.size > 0))
        this.onCommitted?.(changed);
      this.runAfterCommit(client);
      return result;
    } catch (err) {
      this.afterCommitOf.delete(client);
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw this.translate(err);
    } finally {
      // A connection whose ROLLBACK failed is in an unknown state: drop it rather than reuse it.
      client.release(broken);
      if (mode === 'write') this.wrote();
    }
  }

  /**
   * Runs `work` in a transaction shared with the other small writes that arrive in the same turn
   * of the event loop (one COMMIT, one fsync for all; group-commit.ts), under a savepoint of its
   * own: it settles, as `transaction` does, once its transaction has committed, and a failure
   * rolls back `work` alone. For single writes only: `work` must not depend on running alone.
   * `combinable`: how to do it in one statement with the others of its kind in the group.
   */
  grouped<T>(work: (client: pg.PoolClient) => Promise<T>, combinable?: Combinable): Promise<T> {
    return this.groups.run(work, combinable);
  }

  /** Groups committed by `grouped` and the writes in them. */
  groupStats(): { commits: number; writes: number } {
    return this.groups.stats();
  }

  /**
   * A connection of its own, outside the pool, for what lives as long as a session: LISTEN, and
   * session advisory locks. Not yet connected; the caller connects, handles 'error', and ends it.
   */
  dedicatedClient(): pg.Client {
    return new pg.Client(this.clientConfig);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** What the change triggers marked in a transaction. */
export interface TransactionChanges {
  /** The devices changed (netkeep.changed). */
  readonly macs: string[];
  /** The devices only seen again: their new devLastConnection as the answer shows it (netkeep.seen). */
  readonly seen: ReadonlyMap<string, string>;
}

/** What the change triggers marked in this transaction so far. */
async function changedIn(client: pg.PoolClient): Promise<TransactionChanges> {
  const { rows } = await client.query<{ changed: string | null; seen: string | null }>(
    "SELECT current_setting('netkeep.changed', true) AS changed, current_setting('netkeep.seen', true) AS seen",
  );
  const text = rows[0]?.changed ?? '';
  const macs = text === '' ? [] : [...new Set(text.split('\n').filter((mac) => mac !== ''))];
  const seenText = rows[0]?.seen ?? '';
  return seenText === '' ? { macs, seen: noneSeen } : seenChanges(macs, JSON.parse(seenText) as unknown);
}

/**
 * `macs` and a JSON object of devices only seen again (MAC -> stored devLastConnection), as the
 * change triggers write it (netkeep.seen, the change log's column seen). A value that is not
 * text (the time was cleared) makes the device changed.
 */
export function seenChanges(macs: string[], seen: unknown): TransactionChanges {
  const moved = new Map<string, string>();
  if (typeof seen === 'object' && seen !== null)
    for (const [mac, value] of Object.entries(seen)) {
      if (typeof value === 'string') moved.set(mac, seenValue(value));
      else macs.push(mac);
    }
  return { macs, seen: moved };
}

/** Opens the pool of `url` and brings its schema up to date (postgresMigrations). */
export async function openPostgres(url: string, options: PostgresPoolOptions = {}): Promise<PostgresPool> {
  const store = new PostgresPool(url, options);
  try {
    const client = await store.connect();
    try {
      await migratePostgres(client);
    } finally {
      client.release();
    }
    return store;
  } catch (err) {
    await store.close();
    throw store.translate(err);
  }
}

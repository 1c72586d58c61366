/**
 * Several netkeep servers on one database (PostgreSQL only): messages between them, and
 * jobs that at most one of them runs at a time. A SQLite store has no such part (one server).
 */

/** A job lock: held by at most one server; freed when its holder stops or loses the database. */
export interface JobLock {
  /** Whether this server holds it, as far as it knows. */
  readonly held: boolean;
  /**
   * Takes the lock when free; true when this server holds it (again). Never waits; rejects with
   * STORE_UNAVAILABLE when the database cannot be reached.
   */
  tryAcquire(): Promise<boolean>;
  release(): Promise<void>;
}

export interface ServerLink {
  /** This server's id among the servers of the database. */
  readonly serverId: string;
  /** Sends a JSON body to the other servers (delivered to them, not to this one). */
  send(body: unknown): Promise<void>;
  /** Calls `listener` with each body another server sent; returns the function that stops it. */
  onMessage(listener: (body: unknown) => void): () => void;
  /** The lock of the job `name` (e.g. `scan:<site>`); `onLost` when a held lock is lost. */
  lock(name: string, onLost?: () => void): JobLock;
}

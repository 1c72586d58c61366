/**
 * Which devices' answers may have changed, for the caches and the kept counts of a server on
 * PostgreSQL (each consumer with a reader of its own, as on SQLite: sqlite/change-tracking.ts).
 * `poll()` stays synchronous: it drains a pending set that two sources fill as they happen:
 * - this server's own commits, exactly (the pool reports the devices the change triggers marked in
 *   the transaction, before the write's promise settles: a read after a write sees it);
 * - the other servers' commits, from the change log (change-log.ts): the devices each of their
 *   statements changed, read on their hint and on a short timer; or everything (`'all'`) when
 *   the log may have been pruned unread, or after a resync of the change channel.
 */
import type { ChangeReader, Changes } from '../devices.js';
import type { RemoteChange } from './notify.js';

/** What one change reader has not polled yet. */
interface ReaderState {
  pending: Set<string> | 'all';
}

const nothingChanged: ReadonlySet<string> = new Set();

export class PostgresChangeTracking {
  private readonly readers = new Set<ReaderState>();
  private readonly listeners = new Set<(changes: Changes) => void>();

  /** A new reader; it starts with nothing changed. */
  reader(): ChangeReader {
    const state: ReaderState = { pending: new Set() };
    this.readers.add(state);
    return {
      poll: (): Changes => {
        const pending = state.pending;
        if (pending !== 'all' && pending.size === 0) return nothingChanged;
        state.pending = new Set();
        return pending;
      },
    };
  }

  /** Called with what changed, as it is marked (e.g. to count what other servers wrote). */
  onChange(listener: (changes: Changes) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** These devices changed (this server's commit, or another's message). */
  changed(macs: readonly string[]): void {
    if (macs.length === 0) return;
    for (const reader of this.readers) {
      const pending = reader.pending;
      if (pending === 'all') continue;
      for (const mac of macs) pending.add(mac);
    }
    this.tell(new Set(macs));
  }

  /** Anything may have changed. */
  everything(): void {
    for (const reader of this.readers) reader.pending = 'all';
    this.tell('all');
  }

  /**
   * A message from the change channel: everything on a resync (messages may have been missed).
   * True when it was one for the caches; a message (a feed event relayed between servers) is not.
   */
  remote(change: RemoteChange): boolean {
    if (change.kind !== 'resync') return false;
    this.everything();
    return true;
  }

  private tell(changes: Changes): void {
    for (const listener of this.listeners) listener(changes);
  }
}

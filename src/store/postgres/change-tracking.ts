/**
 * Which devices' answers may have changed, for the caches and the kept counts of a server on
 * PostgreSQL (each consumer with a reader of its own, as on SQLite: sqlite/change-tracking.ts).
 * `poll()` stays synchronous: it drains a pending set that two sources fill as they happen:
 * - this server's own commits, exactly (the pool reports the devices the change triggers marked in
 *   the transaction, before the write's promise settles: a read after a write sees it), those
 *   only seen again (devLastConnection alone) apart, with their new value (change-readers.ts);
 * - the other servers' commits, from the change log (change-log.ts): the devices each of their
 *   statements changed (and those only seen again), read on their hint and on a short timer; or
 *   everything (`'all'`) when the log may have been pruned unread, or after a resync of the
 *   change channel.
 */
import { ChangeReaders, noneSeen } from '../change-readers.js';
import type { ChangeReader, Changes } from '../devices.js';
import type { RemoteChange } from './notify.js';

export class PostgresChangeTracking {
  private readonly readers = new ChangeReaders();
  private readonly listeners = new Set<(changes: Changes) => void>();

  /** A new reader; it starts with nothing changed. */
  reader(): ChangeReader {
    return this.readers.reader();
  }

  /** Called with what changed, as it is marked (e.g. to count what other servers wrote). */
  onChange(listener: (changes: Changes) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /**
   * These devices changed (this server's commit, or another's); those of `seen` only moved their
   * devLastConnection (to the value given, as the answer shows it).
   */
  changed(macs: readonly string[], seen: ReadonlyMap<string, string> = noneSeen): void {
    if (macs.length === 0 && seen.size === 0) return;
    this.readers.changed(macs, seen);
    this.tell(new Set([...macs, ...seen.keys()]));
  }

  /** Anything may have changed. */
  everything(): void {
    this.readers.everything();
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

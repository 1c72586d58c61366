/**
 * The change readers of one store (`DeviceStore.changeReader`), fed by its change tracking
 * (sqlite/change-tracking.ts, postgres/change-tracking.ts): each reader keeps what it has not
 * polled yet, so that every cache and the kept counts drain their own.
 *
 * A change is one of three kinds, and a stronger one always wins over a weaker one pending:
 * - everything (`'all'`): any answer may have changed;
 * - a device changed fully: its answer must be read again;
 * - a device was only seen again: its devLastConnection moved, nothing else (a scan cycle's most
 *   common write). Its new value, as the answer shows it, is handed along (`lastSeen`), so that a
 *   cache can put it into the answer it keeps instead of reading the device again.
 */
import { fieldsByName, fromColumn, type StoredField } from '../devices/catalogue.js';
import type { ChangeReader, Changes, Polled } from './devices.js';

/** What one change reader has not polled yet. */
interface ReaderState {
  pending: Set<string> | 'all';
  /**
   * The pending devices whose only change was devLastConnection: its latest value as the answer
   * shows it. A device with any other change pending is not here.
   */
  seen: Map<string, string>;
  /** `seen` of the latest poll. */
  handed: ReadonlyMap<string, string>;
}

const nothingChanged: ReadonlySet<string> = new Set();
/** No device only seen again. */
export const noneSeen: ReadonlyMap<string, string> = new Map();

const lastConnectionField: StoredField = ((): StoredField => {
  const field = fieldsByName.get('devLastConnection');
  if (field === undefined) throw new Error('devLastConnection is not in the catalogue');
  return field;
})();

/** A stored devLastConnection as the answer shows it: the value a `seen` change hands along. */
export function seenValue(stored: string): string {
  return fromColumn(lastConnectionField, stored) as string;
}

export class ChangeReaders {
  private readonly readers = new Set<ReaderState>();

  /**
   * A new reader; it starts with nothing changed.
   * @param looks how SQLite's tracking brings what it has not handed yet to every reader: `now`
   *   looks at the database at once, `shared` once for every caller waiting (PostgreSQL's tracking
   *   hands changes as they come, and has none)
   */
  reader(looks?: { now(): void; shared(): Promise<void> }): ChangeReader {
    const state: ReaderState = { pending: new Set(), seen: new Map(), handed: noneSeen };
    this.readers.add(state);
    const drain = (): Changes => {
      const pending = state.pending;
      if (pending !== 'all' && pending.size === 0) {
        state.handed = noneSeen;
        return nothingChanged;
      }
      state.pending = new Set();
      state.handed = state.seen.size === 0 ? noneSeen : state.seen;
      if (state.seen.size > 0) state.seen = new Map();
      return pending;
    };
    return {
      poll: (): Changes => {
        looks?.now();
        return drain();
      },
      pollShared: async (): Promise<Polled> => {
        await looks?.shared();
        const changes = drain();
        return { changes, seen: state.handed };
      },
      lastSeen: (): ReadonlyMap<string, string> => state.handed,
    };
  }

  /**
   * `full` changed fully; `seen` (device → its new devLastConnection as the answer shows it) moved
   * only that, unless the device is in `full` as well or has more pending already.
   */
  changed(full: ReadonlySet<string> | readonly string[], seen: ReadonlyMap<string, string> = noneSeen): void {
    for (const reader of this.readers) {
      const pending = reader.pending;
      if (pending === 'all') continue;
      for (const mac of full) {
        pending.add(mac);
        reader.seen.delete(mac);
      }
    }
    if (seen.size === 0) return;
    const fullSet: ReadonlySet<string> = Array.isArray(full) ? new Set(full) : (full as ReadonlySet<string>);
    for (const reader of this.readers) {
      const pending = reader.pending;
      if (pending === 'all') continue;
      for (const [mac, value] of seen) {
        if (fullSet.has(mac)) continue;
        if (!pending.has(mac)) {
          pending.add(mac);
          reader.seen.set(mac, value);
        } else if (reader.seen.has(mac)) reader.seen.set(mac, value);
      }
    }
  }

  /** Every reader is told that everything changed. */
  everything(): void {
    for (const reader of this.readers) {
      reader.pending = 'all';
      reader.seen.clear();
    }
  }
}

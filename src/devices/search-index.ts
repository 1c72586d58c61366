/**
 * The device search (`q`: a substring of MAC, name, IP, vendor or owner) from memory. In SQL it is
 * a `LIKE '%…%'` on five columns of every row, which no index can serve: 5-30 ms per search of
 * 10,000 devices, and the page and its total were two such scans. Here every device's searched
 * columns are kept folded, and a search is a substring test over them: well under a millisecond
 * for 10,000 devices.
 *
 * It answers exactly what the SQL does (a property test compares them after any writes):
 * - SQLite's LIKE ignores the case of ASCII letters only (no ICU here): `foldAscii` lowers A-Z and
 *   nothing else, on both sides;
 * - `%`, `_` and `\` are literal in a search (list-query.ts escapes them), so the pattern is a
 *   plain substring; a NULL column matches nothing;
 * - devMac is searched for the text with '-' read as ':' (`macSearchText`), the others for the text;
 * - the matches come in MAC order (SQLite's BINARY order of the canonical MACs, as `<` compares).
 *
 * Kept exact the way the list cache is (list-cache.ts): before each search the store's change
 * reader says which devices may have changed; a commit by another process reloads every device (one
 * narrow SELECT), this process's writes reload the devices they name.
 */
import { macSearchText, searchColumns } from './list-query.js';
import type { ChangeReader, DeviceStore, SearchTexts } from '../store/devices.js';

/** A-Z to a-z; every other character as it is (SQLite's LIKE without ICU). */
export function foldAscii(text: string): string {
  return /[A-Z]/.test(text) ? text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase()) : text;
}

/** One device as searched: its folded MAC and its other searched columns (null ones left out). */
interface Entry {
  readonly mac: string;
  readonly foldedMac: string;
  readonly texts: readonly string[];
}

function entryOf(row: SearchTexts): Entry {
  const texts: string[] = [];
  for (const column of searchColumns) {
    const value = row[column];
    if (typeof value === 'string') texts.push(foldAscii(value));
  }
  return { mac: row.devMac, foldedMac: foldAscii(row.devMac), texts };
}

/**
 * Between the texts of one device ('\u0000') and between devices ('\u0001') in the joined texts. A
 * match of a text without them lies inside one field of one device; a search for a text with one
 * of them (possible, if absurd) tests each field on its own.
 */
const hasSeparator = (text: string): boolean => text.includes('\u0000') || text.includes('\u0001');

/** Texts of every device in one string, where each device's part starts, and which characters occur. */
interface Joined {
  readonly text: string;
  readonly starts: Uint32Array;
  /**
   * 1 for each UTF-16 code unit the text holds: a needle with a unit the text lacks matches
   * nothing, without a scan (most searches of the MACs: a name's letters are not in `aa:bb:…`).
   */
  readonly units: Uint8Array;
}

function joinParts(parts: readonly string[]): Joined {
  const starts = new Uint32Array(parts.length);
  let at = 0;
  for (const [i, part] of parts.entries()) {
    starts[i] = at;
    at += part.length + 1;
  }
  const text = parts.join('\u0001');
  const units = new Uint8Array(65_536);
  for (let i = 0; i < text.length; i++) units[text.charCodeAt(i)] = 1;
  return { text, starts, units };
}

function joinTexts(entries: readonly Entry[]): { macs: Joined; texts: Joined } {
  return {
    macs: joinParts(entries.map((e) => e.foldedMac)),
    texts: joinParts(entries.map((e) => e.texts.join('\u0000'))),
  };
}

/**
 * The devices whose part of `joined` holds `needle`, by index, ascending: one `indexOf` over the
 * whole text (V8's string search skips ahead; a loop over 10,000 short strings does not), then on
 * from the next device's part.
 */
function findIn(joined: Joined, needle: string): number[] {
  const found: number[] = [];
  const { text, starts, units } = joined;
  for (let i = 0; i < needle.length; i++) if (units[needle.charCodeAt(i)] !== 1) return found;
  let from = 0;
  for (;;) {
    const at = text.indexOf(needle, from);
    if (at < 0) return found;
    // The device whose part holds `at`: the last start at or before it.
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >>> 1;
      if ((starts[mid] ?? 0) <= at) low = mid;
      else high = mid - 1;
    }
    found.push(low);
    if (low + 1 >= starts.length) return found;
    from = starts[low + 1] ?? text.length;
  }
}

/** Two ascending lists of indexes as one, each index once. */
function union(a: readonly number[], b: readonly number[]): number[] {
  if (a.length === 0) return [...b];
  if (b.length === 0) return [...a];
  const all: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const x = a[i] ?? Infinity;
    const y = b[j] ?? Infinity;
    all.push(Math.min(x, y));
    if (x <= y) i++;
    if (y <= x) j++;
  }
  return all;
}

export class DeviceSearchIndex {
  private readonly changes: ChangeReader;
  /** Every device by MAC; undefined until the first search (and after another process's commit). */
  private entries: Map<string, Entry> | undefined;
  /** The entries in MAC order; rebuilt when a device comes or goes. */
  private ordered: readonly Entry[] | undefined;
  /** The entries' texts joined, made at the first search after any change. */
  private joined: { readonly macs: Joined; readonly texts: Joined } | undefined;

  constructor(private readonly repository: DeviceStore) {
    this.changes = repository.changeReader();
  }

  /** The MACs of every device matching `q` (not empty), in MAC order: `listOrder({ q })`. */
  async matches(q: string): Promise<string[]> {
    const needle = foldAscii(q);
    const macNeedle = foldAscii(macSearchText(q));
    const entries = await this.current();
    if (hasSeparator(needle) || hasSeparator(macNeedle))
      return entries
        .filter((e) => e.foldedMac.includes(macNeedle) || e.texts.some((text) => text.includes(needle)))
        .map((e) => e.mac);
    this.joined ??= joinTexts(entries);
    // Only the devices found are touched (no pass over every device): entries are in MAC order.
    const found: string[] = [];
    for (const i of union(findIn(this.joined.macs, macNeedle), findIn(this.joined.texts, needle))) {
      const entry = entries[i];
      if (entry !== undefined) found.push(entry.mac);
    }
    return found;
  }

  private async current(): Promise<readonly Entry[]> {
    const changed = this.changes.poll();
    if (changed === 'all' || changed.size > 0) this.joined = undefined;
    if (changed === 'all' || this.entries === undefined) {
      this.entries = new Map((await this.repository.searchTexts()).map((row) => [row.devMac, entryOf(row)]));
      this.ordered = undefined;
    } else if (changed.size > 0) {
      const macs = [...changed];
      const rows = new Map((await this.repository.searchTexts(macs)).map((row) => [row.devMac, row]));
      for (const mac of macs) {
        const row = rows.get(mac);
        const had = this.entries.has(mac);
        if (row === undefined) this.entries.delete(mac);
        else this.entries.set(mac, entryOf(row));
        // A device came or went: the order is made again (an edit keeps its place).
        if (had !== (row !== undefined)) this.ordered = undefined;
      }
      if (this.ordered !== undefined) this.ordered = this.ordered.map((e) => this.entries?.get(e.mac) ?? e);
    }
    this.ordered ??= [...this.entries.values()].sort((a, b) => (a.mac < b.mac ? -1 : a.mac > b.mac ? 1 : 0));
    return this.ordered;
  }
}

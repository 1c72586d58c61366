/**
 * The JSON text of `GET /device/<mac>`, per period, kept until a write changes that answer or the
 * clock moves it past what the entry can follow.
 *
 * Why it is exact: between writes an answer depends on the clock in two ways only. Its connected
 * seconds change at a constant rate (each open session adds a second per second; for a period, each
 * closed session that straddles the moving start loses one), and its counts change when the moving
 * start passes a row's time. The store says both (`TimedView`: `seconds`, `slope`, `until`), so an
 * entry keeps its text split around the hours value and a hit splices in the hours for `now`, until
 * `until`. Before each answer the store says which devices' answers changed since the last one
 * (its change reader): a write drops exactly those entries (the device, its parent when a child
 * field changed, every device a scan cycle touched), whichever process made it; "everything"
 * (a replaced file, a change log pruned past what this reader read) drops them all.
 *
 * A device merely seen again by a scan cycle changes only its devLastConnection, once per cycle.
 * Its answer then differs by that one value (no other field derives from it: devStatus and
 * devSleeping read devPresentLastScan and the scanner's memory, the history fields read Events and
 * Sessions), so when the change reader says that was the device's only change (`lastSeen`), its
 * entries keep their text and take the new value in place.
 *
 * Why text: serialising ~40 fields per request was a large part of a GET, and a string takes a
 * fraction of the memory of the object it came from.
 *
 * An alias (a device's other MAC) is answered with its device's entry. Which device it belongs to
 * is read once (`resolveMac`) and kept until that device changes: every write of an alias (added,
 * moved by a merge, split off into a device of its own, pruned) reports the device it belonged
 * to, on both stores. Without this, each GET by alias read the store twice (no such device, then
 * the alias) before the cache answered.
 */
import { periods, type Period } from '../time.js';
import { presenceHours, type ChangeReader, type Changes, type DeviceStore } from '../store/devices.js';
import { SizedMap } from './sized-map.js';

interface Entry {
  /** JSON text up to and including `"devPresenceHours":`. */
  readonly head: string;
  /**
   * Where devLastConnection's value starts in `head` and its length; undefined when the key cannot
   * be found once and only once (the entry is then dropped on any change).
   */
  readonly seenAt: number | undefined;
  readonly seenLength: number;
  /** JSON text after the hours value. */
  readonly tail: string;
  /** Connected seconds at `atSeconds`. */
  readonly seconds: number;
  /** Seconds gained per second. */
  readonly slope: number;
  /** Unix seconds at which the entry was made. */
  readonly atSeconds: number;
  /** Unix milliseconds from which the entry no longer holds; Infinity: until a write. */
  readonly until: number;
}

/**
 * A device's entries, by period. Kept by device, not by device and period: a scan cycle changes
 * thousands of devices at once, and each is then one lookup instead of one per period (the first
 * GET after a cycle, which takes the changes in, spends about 19 ms on them instead of 27). Every
 * record has every period as a key, in one order (`entriesWith`), so that all share one shape.
 */
type DeviceEntries = { readonly [P in Period]: Entry | undefined };

const hoursKey = '"devPresenceHours":';
const seenKey = '"devLastConnection":';

const cachedPeriods = Object.keys(periods) as Period[];

/** A device's entries with `period`'s replaced by `entry` (undefined: none). */
function entriesWith(
  entries: DeviceEntries | undefined,
  period: Period,
  entry: Entry | undefined,
): DeviceEntries {
  const next = {} as { [P in Period]: Entry | undefined };
  for (const each of cachedPeriods) next[each] = each === period ? entry : entries?.[each];
  return next;
}

/** Characters of JSON text a device's entries keep (0: none). */
function charsOf(entries: DeviceEntries): number {
  let chars = 0;
  for (const period of cachedPeriods) {
    const entry = entries[period];
    if (entry !== undefined) chars += entry.head.length + entry.tail.length;
  }
  return chars;
}

/**
 * Characters of JSON text kept: 12 Mi characters (12-24 MiB of heap); beyond it the entries cached
 * first are dropped first. A device is ~1 KB of JSON with the catalogue's defaults (so one period
 * of 10,000 devices fits), but its text fields may hold up to 16 KB each, so the bound is on size,
 * not on the number of devices. Twice this bound put the server over its 200 MB RSS target under
 * the devices benchmark (docs/benchmarks-history.md), for no gain on a network of realistic size.
 */
const defaultMaxChars = 12 * 1024 * 1024;

/** Aliases kept with their device (beyond it, an alias is resolved anew on each GET). */
const maxAliases = 65_536;

export class DeviceJsonCache {
  /** Keyed by MAC, oldest first. */
  private readonly devices: SizedMap<string, DeviceEntries>;
  private readonly changes: ChangeReader;
  /** Polls that took a change in: a miss keeps what it read only if none did while it read. */
  private changesTaken = 0;
  /** Aliases answered before: alias → its device. */
  private readonly deviceOfAlias = new Map<string, string>();
  /** The reverse of `deviceOfAlias`: device → its aliases kept there. */
  private readonly aliasesOfDevice = new Map<string, Set<string>>();

  /**
   * @param repository where views come from and which says what changed
   * @param maxChars JSON characters kept
   */
  constructor(
    private readonly repository: DeviceStore,
    maxChars = defaultMaxChars,
  ) {
    this.changes = repository.changeReader();
    this.devices = new SizedMap(charsOf, maxChars);
  }

  /** Every period's entry of a device takes `value` (JSON text) as its devLastConnection. */
  private refreshSeen(mac: string, value: string): void {
    let entries = this.devices.get(mac);
    if (entries === undefined) return;
    for (const period of cachedPeriods) {
      const entry = entries[period];
      if (entry === undefined) continue;
      const at = entry.seenAt;
      // The key was not found once and only once: the entry is dropped.
      const head =
        at === undefined
          ? undefined
          : `${entry.head.slice(0, at)}${value}${entry.head.slice(at + entry.seenLength)}`;
      entries = entriesWith(
        entries,
        period,
        head === undefined ? undefined : { ...entry, head, seenLength: value.length },
      );
    }
    this.keep(mac, entries);
  }

  /** Keeps a device's entries; none at all drops the device. */
  private keep(mac: string, entries: DeviceEntries): void {
    if (charsOf(entries) > 0) this.devices.set(mac, entries);
    else this.devices.delete(mac);
  }

  /** Forgets the aliases kept for `device`. */
  private forgetAliases(device: string): void {
    for (const alias of this.aliasesOfDevice.get(device) ?? []) this.deviceOfAlias.delete(alias);
    this.aliasesOfDevice.delete(device);
  }

  private rememberAlias(alias: string, device: string): void {
    if (this.deviceOfAlias.size >= maxAliases) return;
    this.deviceOfAlias.set(alias, device);
    const aliases = this.aliasesOfDevice.get(device);
    if (aliases === undefined) this.aliasesOfDevice.set(device, new Set([alias]));
    else aliases.add(alias);
  }

  /**
   * Drops or refreshes the entries of the devices a poll named; `seen`, those of them whose only
   * change was devLastConnection, with its new value.
   */
  private takeChanges(changed: Changes, seen: ReadonlyMap<string, string> | undefined): void {
    if (changed === 'all') {
      this.changesTaken++;
      this.devices.clear();
      this.deviceOfAlias.clear();
      this.aliasesOfDevice.clear();
      return;
    }
    if (changed.size === 0) return;
    this.changesTaken++;
    for (const device of changed) {
      const value = seen?.get(device);
      if (value === undefined) {
        this.devices.delete(device);
        if (this.deviceOfAlias.size > 0) this.forgetAliases(device);
      } else this.refreshSeen(device, JSON.stringify(value));
    }
  }

  /**
   * JSON text of the device `given` names, by its own MAC or an alias, for `period`; undefined
   * when there is no such device.
   * @param now the time the answer is for; by default the time of the look at the store that the
   *   request waits for (`pollShared`), so that the clock is never behind the data
   */
  async get(given: string, period: Period = 'all', now?: Date): Promise<string | undefined> {
    const polled = await this.changes.pollShared();
    this.takeChanges(polled.changes, polled.seen);
    now ??= new Date();
    const known = this.deviceOfAlias.get(given);
    const json = await this.answer(known ?? given, now, period);
    // A MAC is either a device or an alias, never both (DeviceMacs' triggers), so a device's own
    // MAC is answered without first asking the store whether it is an alias.
    if (json !== undefined || known !== undefined) return json;
    const takenBefore = this.changesTaken;
    const device = await this.repository.resolveMac(given);
    if (device === given) return undefined;
    this.takeChanges(this.changes.poll(), this.changes.lastSeen?.());
    // Kept only if no change came in while it was read (it may have been one of this alias).
    if (this.changesTaken === takenBefore) this.rememberAlias(given, device);
    return this.answer(device, now, period);
  }

  /** JSON text of the device `mac` for `period`, or undefined when the device does not exist. */
  private async answer(mac: string, now: Date, period: Period): Promise<string | undefined> {
    const nowMs = now.getTime();
    const nowSeconds = Math.floor(nowMs / 1000);
    const hit = this.devices.get(mac)?.[period];
    if (hit !== undefined) {
      if (nowMs < hit.until && nowSeconds >= hit.atSeconds) {
        const seconds = hit.seconds + hit.slope * (nowSeconds - hit.atSeconds);
        return `${hit.head}${String(presenceHours(seconds))}${hit.tail}`;
      }
      this.keep(mac, entriesWith(this.devices.get(mac), period, undefined));
    }
    // A hit above never waits for the store; a miss reads the view once.
    const takenBefore = this.changesTaken;
    const timed = await this.repository.getTimed(mac, period, now);
    if (timed === undefined) return undefined;
    const json = JSON.stringify(timed.view);
    const until = timed.until === null ? Infinity : timed.until.getTime();
    // Another request took a change in while this one read (PostgreSQL reads take a round trip):
    // it may be a change of this device made after the read, and kept now it would be lost.
    if (until <= nowMs || this.changesTaken !== takenBefore) return json;
    // The first unescaped `"devPresenceHours":` is the key: inside a string value quotes are escaped.
    const valueStart = json.indexOf(hoursKey) + hoursKey.length;
    const valueText = String(timed.view.devPresenceHours);
    if (valueStart < hoursKey.length || !json.startsWith(valueText, valueStart)) return json;
    const head = json.slice(0, valueStart);
    // The key once only: a devCustomProps object could hold a key of that name.
    const seenKeyAt = head.indexOf(seenKey);
    const seenText = JSON.stringify(timed.view.devLastConnection ?? null);
    const seenAt = seenKeyAt + seenKey.length;
    const seenFound =
      seenKeyAt >= 0 && json.lastIndexOf(seenKey) === seenKeyAt && head.startsWith(seenText, seenAt);
    const entry: Entry = {
      head,
      seenAt: seenFound ? seenAt : undefined,
      seenLength: seenText.length,
      tail: json.slice(valueStart + valueText.length),
      seconds: timed.seconds,
      slope: timed.slope,
      atSeconds: nowSeconds,
      until,
    };
    this.keep(mac, entriesWith(this.devices.get(mac), period, entry));
    return json;
  }
}

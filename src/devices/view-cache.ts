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
 * (its change reader): a write through this process drops exactly those entries (the device, its
 * parent when a child field changed, every device a scan cycle touched); a commit by another
 * process, whose rows nothing here can name, drops them all.
 *
 * Why text: serialising ~40 fields per request was a large part of a GET, and a string takes a
 * fraction of the memory of the object it came from.
 */
import { periods, type Period } from '../time.js';
import { presenceHours, type ChangeReader, type DeviceStore } from '../store/devices.js';
import { SizedMap } from './sized-map.js';

interface Entry {
  /** JSON text up to and including `"devPresenceHours":`. */
  readonly head: string;
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

const hoursKey = '"devPresenceHours":';

const cachedPeriods = Object.keys(periods) as Period[];
const entryKey = (mac: string, period: Period): string => `${period}|${mac}`;

/**
 * Characters of JSON text kept: 12 Mi characters (12-24 MiB of heap); beyond it the entries cached
 * first are dropped first. A device is ~1 KB of JSON with the catalogue's defaults (so one period
 * of 10,000 devices fits), but its text fields may hold up to 16 KB each, so the bound is on size,
 * not on the number of devices. Twice this bound put the server over its 200 MB RSS target under
 * the devices benchmark (docs/benchmarks.md), for no gain on a network of realistic size.
 */
const defaultMaxChars = 12 * 1024 * 1024;

export class DeviceJsonCache {
  /** Keyed by `entryKey(mac, period)`, oldest first. */
  private readonly entries: SizedMap<string, Entry>;
  private readonly changes: ChangeReader;

  /**
   * @param repository where views come from and which says what changed
   * @param maxChars JSON characters kept
   */
  constructor(
    private readonly repository: DeviceStore,
    maxChars = defaultMaxChars,
  ) {
    this.changes = repository.changeReader();
    this.entries = new SizedMap((entry) => entry.head.length + entry.tail.length, maxChars);
  }

  /** Every period's entry of a device. */
  private drop(mac: string): void {
    for (const period of cachedPeriods) this.entries.delete(entryKey(mac, period));
  }

  /** JSON text of the device for `period`, or undefined when the device does not exist. */
  async get(mac: string, now: Date, period: Period = 'all'): Promise<string | undefined> {
    const changed = this.changes.poll();
    if (changed === 'all') this.entries.clear();
    else for (const device of changed) this.drop(device);
    const nowMs = now.getTime();
    const nowSeconds = Math.floor(nowMs / 1000);
    const key = entryKey(mac, period);
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      if (nowMs < hit.until && nowSeconds >= hit.atSeconds) {
        const seconds = hit.seconds + hit.slope * (nowSeconds - hit.atSeconds);
        return `${hit.head}${String(presenceHours(seconds))}${hit.tail}`;
      }
      this.entries.delete(key);
    }
    // A hit above never waits for the store; a miss reads the view once.
    const timed = await this.repository.getTimed(mac, period, now);
    if (timed === undefined) return undefined;
    const json = JSON.stringify(timed.view);
    const until = timed.until === null ? Infinity : timed.until.getTime();
    if (until <= nowMs) return json;
    // The first unescaped `"devPresenceHours":` is the key: inside a string value quotes are escaped.
    const valueStart = json.indexOf(hoursKey) + hoursKey.length;
    const valueText = String(timed.view.devPresenceHours);
    if (valueStart < hoursKey.length || !json.startsWith(valueText, valueStart)) return json;
    this.entries.set(key, {
      head: json.slice(0, valueStart),
      tail: json.slice(valueStart + valueText.length),
      seconds: timed.seconds,
      slope: timed.slope,
      atSeconds: nowSeconds,
      until,
    });
    return json;
  }
}

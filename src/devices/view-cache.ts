/**
 * The JSON text of `GET /device/<mac>` (period `all`), kept until a write changes that answer.
 *
 * Why it is exact: with no period window nothing in the answer depends on the clock except
 * devPresenceHours, and that grows by exactly one second per second for each open session that
 * has started. An entry therefore stores its text split around the hours value, the connected
 * seconds at the time it was made, and the number of open sessions; a hit splices in the hours for
 * `now`. Before each answer the store says which devices' answers changed since the last one
 * (`pollChanges`): a write through this process drops exactly those entries (the device, its
 * parent when a child field changed, every device a scan cycle touched); a commit by another
 * process, whose rows nothing here can name, drops them all.
 *
 * Why text: serialising ~40 fields per request was a large part of a GET, and a string takes a
 * fraction of the memory of the object it came from.
 */
import { presenceHours, type DeviceRepository } from './repository.js';

interface Entry {
  /** JSON text up to and including `"devPresenceHours":`. */
  readonly head: string;
  /** JSON text after the hours value. */
  readonly tail: string;
  /** Connected seconds at `atSeconds`. */
  readonly seconds: number;
  readonly openSessions: number;
  /** Unix seconds at which the entry was made. */
  readonly atSeconds: number;
}

const hoursKey = '"devPresenceHours":';

/**
 * Characters of JSON text kept before the cache starts over: 16 Mi characters, 16-32 MiB of heap.
 * A device is ~1 KB of JSON with the catalogue's defaults, but its text fields may hold up to 16 KB
 * each, so the bound is on size, not on the number of devices.
 */
const defaultMaxChars = 16 * 1024 * 1024;

export class DeviceJsonCache {
  private readonly entries = new Map<string, Entry>();
  private chars = 0;

  /**
   * @param repository where views come from and which says what changed
   * @param maxChars JSON characters kept before the cache starts over
   */
  constructor(
    private readonly repository: DeviceRepository,
    private readonly maxChars = defaultMaxChars,
  ) {}

  private clear(): void {
    this.entries.clear();
    this.chars = 0;
  }

  private drop(mac: string): void {
    const entry = this.entries.get(mac);
    if (entry === undefined) return;
    this.chars -= entry.head.length + entry.tail.length;
    this.entries.delete(mac);
  }

  /** JSON text of the device for period `all`, or undefined when the device does not exist. */
  get(mac: string, now: Date): string | undefined {
    const changed = this.repository.pollChanges();
    if (changed === 'all') this.clear();
    else for (const device of changed) this.drop(device);
    const nowSeconds = Math.floor(now.getTime() / 1000);
    const hit = this.entries.get(mac);
    if (hit !== undefined) {
      const seconds = hit.seconds + hit.openSessions * (nowSeconds - hit.atSeconds);
      return `${hit.head}${String(presenceHours(seconds))}${hit.tail}`;
    }
    const timed = this.repository.getTimed(mac, 'all', now);
    if (timed === undefined) return undefined;
    const json = JSON.stringify(timed.view);
    // An open session dated in the future adds nothing until it starts: not linear, not cached.
    const latest = timed.latestOpenStart?.getTime();
    if (latest !== undefined && !(latest <= nowSeconds * 1000)) return json;
    // The first unescaped `"devPresenceHours":` is the key: inside a string value quotes are escaped.
    const valueStart = json.indexOf(hoursKey) + hoursKey.length;
    const valueText = String(timed.view.devPresenceHours);
    if (valueStart < hoursKey.length || !json.startsWith(valueText, valueStart)) return json;
    if (this.chars + json.length > this.maxChars) this.clear();
    const head = json.slice(0, valueStart);
    const tail = json.slice(valueStart + valueText.length);
    this.chars += head.length + tail.length;
    this.entries.set(mac, {
      head,
      tail,
      seconds: timed.seconds,
      openSessions: timed.openSessions,
      atSeconds: nowSeconds,
    });
    return json;
  }
}

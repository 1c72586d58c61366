/**
 * GET /devices from memory: each device's list item as JSON text, and each list shape's order (the
 * MACs of the filtered, sorted list), so that a page is a slice of an order and a join of ready
 * texts, and the whole list streams from the texts without being built as one document.
 *
 * Why it is exact: an item shows its device's stored fields and devStatus only, and which devices
 * a list holds and in which order depends on those fields only (the filters and sorts of
 * list-query.ts read Devices columns). Before each answer (and between the pieces of a streamed
 * one) the store's change reader says which devices may have changed: a commit by another process
 * drops everything; this process's writes name their devices, whose items are read again. When
 * every such item was cached and reads the same as before (a change of history only, or a write
 * that changed nothing), the orders stay; otherwise (a field changed, a device came or went, or
 * there is no earlier text to compare with) every order is dropped and read again when asked.
 * Nothing in it depends on which fields the catalogue has or which filters list-query.ts offers.
 */
import { isPlainSearch, type DeviceListQuery } from './list-query.js';
import type { ChangeReader, DeviceListItem, DeviceStore } from '../store/devices.js';
import { DeviceSearchIndex } from './search-index.js';
import { SizedMap } from './sized-map.js';

/**
 * Characters of item text kept: 12 Mi (12-24 MiB of heap), the oldest dropped first. An item is
 * ~740 characters with realistic fields (10,000 devices fit), but its text fields may hold 16 KB
 * each, so the bound is on size.
 */
const defaultMaxChars = 12 * 1024 * 1024;
/** An item longer than this (a device whose text fields are near their bounds) is not kept. */
const maxItemChars = 256 * 1024;
/** List shapes (filter, search, sort) whose order is kept; the one kept longest goes first. */
const maxOrders = 16;
/** Devices handled per step of a streamed list: the changes are polled again between steps. */
const step = 64;
/** Devices read from the store at once: a device may hold ~330 KB of text, 8 stay under 3 MB. */
const readBatch = 8;
/** Above this many changed devices (a scan cycle), the orders are dropped without comparing. */
const compareAtMost = 64;
/**
 * Bytes of whole answers kept; the oldest dropped first. Pages of 100 devices are ~90 KB since
 * the presence flags and the watch fields came, so the 100 pages of a 10,000-device list are ~9 MB:
 * at 8 MiB they no longer fit, and every page made again pushed out another (the devices bench's
 * pages went from ~90 to ~160 µs of CPU each). 16 MiB holds them with room.
 */
const defaultMaxAnswerBytes = 16 * 1024 * 1024;
/** Whole answers kept at most, however small (empty pages past the end are a few bytes each). */
const maxAnswers = 1024;
/** An answer longer than this is never kept (it is streamed, not made as one text). */
const maxAnswerChars = 256 * 1024;

/**
 * The fields of a lighter list (GET /devices/map): each item is these fields of the list item, as
 * JSON text, kept beside the whole items and dropped as they are.
 */
export type ItemFields = readonly (keyof DeviceListItem)[];

export interface ListPage {
  /** Devices in the whole filtered list. */
  readonly total: number;
  /** The page's items as JSON text, read as they are iterated. */
  readonly items: AsyncIterable<string>;
}

export class DeviceListCache {
  /** Item JSON text by MAC, oldest first. */
  private readonly items: SizedMap<string, string>;
  /**
   * The lighter items' texts (a few fields of each item), by field list then MAC: made from the
   * whole item's text when that is kept, else from the item the store gives (whose whole text is
   * then not kept). Dropped whenever the device may have changed. The field lists are the code's
   * own (the map's), never a request's, so there are few.
   */
  private readonly projections = new Map<string, SizedMap<string, string>>();
  /** The MACs of each list shape, in its order. */
  private readonly orders = new Map<string, readonly string[]>();
  /**
   * Whole answers (a page as the route renders it) as bytes, by shape, offset and limit: a page
   * asked again is sent as it is. Dropped whenever an order or any item changes.
   */
  private readonly answers: SizedMap<string, Buffer>;
  private readonly changes: ChangeReader;
  /** A plain search's order comes from memory, not from a scan of every row (search-index.ts). */
  private readonly search: DeviceSearchIndex;

  /**
   * @param repository where lists come from and which says what changed
   * @param maxChars item text characters kept
   * @param maxAnswerBytes bytes of whole answers kept
   */
  constructor(
    private readonly repository: DeviceStore,
    private readonly maxChars = defaultMaxChars,
    maxAnswerBytes = defaultMaxAnswerBytes,
  ) {
    this.changes = repository.changeReader();
    this.search = new DeviceSearchIndex(repository);
    this.items = new SizedMap((text) => text.length, maxChars);
    this.answers = new SizedMap((bytes) => bytes.length, maxAnswerBytes, maxAnswers);
  }

  /**
   * The answer `render` makes of the page, kept as bytes when it is text of at most 256 Ki
   * characters, and given again while nothing in it can have changed; anything else it returns (a
   * stream of a long list) is handed over as it is. With `fields`, each item holds only those.
   */
  async answer<T>(
    query: DeviceListQuery,
    offset: number,
    limit: number | null,
    render: (page: ListPage) => Promise<string | T>,
    fields?: ItemFields,
  ): Promise<Buffer | T> {
    await this.refresh();
    const key = `${shapeKey(query)}|${offset}|${String(limit)}|${fields?.join(',') ?? ''}`;
    // A kept answer is sent without asking the store anything more.
    const kept = this.answers.get(key);
    if (kept !== undefined) return kept;
    const made = await render(await this.page(query, offset, limit, fields));
    if (typeof made !== 'string') return made;
    const bytes = Buffer.from(made);
    if (made.length <= maxAnswerChars) this.answers.set(key, bytes);
    return bytes;
  }

  /**
   * The list for `query` from `offset`, `limit` devices (null: every one from the offset on); with
   * `fields`, each item holds only those fields, in that order.
   */
  async page(
    query: DeviceListQuery,
    offset: number,
    limit: number | null,
    fields?: ItemFields,
  ): Promise<ListPage> {
    await this.refresh();
    const order = await this.order(query);
    const macs = order.slice(offset, limit === null ? undefined : offset + limit);
    return { total: order.length, items: this.texts(macs, fields) };
  }

  /** Item texts of `macs` (or of their `fields`), step by step; a device deleted meanwhile is left out. */
  private async *texts(macs: readonly string[], fields?: ItemFields): AsyncGenerator<string> {
    const projected = fields === undefined ? undefined : this.projection(fields);
    const project = (item: DeviceListItem): string =>
      JSON.stringify(Object.fromEntries((fields ?? []).map((name) => [name, item[name]])));
    for (let at = 0; at < macs.length; at += step) {
      if (at > 0) await this.refresh();
      const slice = macs.slice(at, at + step);
      const texts = slice.map((mac) => {
        if (projected === undefined) return this.items.get(mac);
        const kept = projected.get(mac);
        if (kept !== undefined) return kept;
        // The whole item's text is kept: its fields come from it, without asking the store.
        const whole = this.items.get(mac);
        if (whole === undefined) return undefined;
        const text = project(JSON.parse(whole) as DeviceListItem);
        projected.set(mac, text);
        return text;
      });
      const missing = slice.filter((_, i) => texts[i] === undefined);
      const read = new Map<string, string>();
      for (let from = 0; from < missing.length; from += readBatch) {
        const batch = missing.slice(from, from + readBatch);
        (await this.repository.listItems(batch)).forEach((item, i) => {
          const mac = batch[i];
          if (item === undefined || mac === undefined) return;
          if (projected === undefined) {
            const text = JSON.stringify(item);
            read.set(mac, text);
            this.keep(mac, text);
          } else {
            // Only the few fields are kept: making the whole item's text too would cost a light
            // list of 10,000 devices a tenth more when the cache is cold, for nothing it shows.
            const light = project(item);
            read.set(mac, light);
            projected.set(mac, light);
          }
        });
      }
      for (const [i, mac] of slice.entries()) {
        const text = texts[i] ?? read.get(mac);
        if (text !== undefined) yield text;
      }
    }
  }

  /** The kept texts of the items' `fields`, by MAC. */
  private projection(fields: ItemFields): SizedMap<string, string> {
    const key = fields.join(',');
    let kept = this.projections.get(key);
    if (kept === undefined) {
      kept = new SizedMap((text) => text.length, this.maxChars);
      this.projections.set(key, kept);
    }
    return kept;
  }

  private async order(query: DeviceListQuery): Promise<readonly string[]> {
    const key = shapeKey(query);
    let macs = this.orders.get(key);
    if (macs === undefined) {
      if (isPlainSearch(query)) {
        const found = await this.search.matches(query.q);
        macs = query.order === 'desc' ? found.reverse() : found;
      } else macs = await this.repository.listOrder(query);
      for (const oldest of this.orders.keys()) {
        if (this.orders.size < maxOrders) break;
        this.orders.delete(oldest);
      }
      this.orders.set(key, macs);
    }
    return macs;
  }

  /** Takes in what changed since the last answer (see the comment at the top). */
  private async refresh(): Promise<void> {
    const changed = this.changes.poll();
    for (const kept of this.projections.values()) {
      if (changed === 'all') kept.clear();
      else for (const mac of changed) kept.delete(mac);
    }
    if (changed === 'all') {
      this.items.clear();
      this.orders.clear();
      this.answers.clear();
      return;
    }
    if (changed.size === 0) return;
    if (this.orders.size === 0 || changed.size > compareAtMost) {
      for (const mac of changed) this.items.delete(mac);
      this.orders.clear();
      this.answers.clear();
      return;
    }
    const macs = [...changed];
    const items = await this.repository.listItems(macs);
    let ordersHold = true;
    for (const [i, mac] of macs.entries()) {
      const item = items[i];
      const before = this.items.get(mac);
      const text = item === undefined ? undefined : JSON.stringify(item);
      if (before === undefined || text !== before) ordersHold = false;
      if (text === undefined) this.items.delete(mac);
      else if (text !== before) this.keep(mac, text);
    }
    if (!ordersHold) {
      this.orders.clear();
      this.answers.clear();
    }
  }

  private keep(mac: string, text: string): void {
    // One huge device must not empty the cache.
    if (text.length > maxItemChars) this.items.delete(mac);
    else this.items.set(mac, text);
    // A lighter text made from an older item is stale (refresh() keeps an item read again).
    for (const kept of this.projections.values()) kept.delete(mac);
  }
}

/** One key per list shape (filter, search, sort, order). */
function shapeKey(query: DeviceListQuery): string {
  return JSON.stringify([
    query.status ?? '',
    query.sleeping ?? '',
    query.flapping ?? '',
    query.random ?? '',
    query.site ?? null,
    query.q ?? '',
    query.sort ?? '',
    query.order ?? '',
  ]);
}

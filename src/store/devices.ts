/**
 * The device part of the store: what routes, the caches, naming and the scanner may ask of the
 * storage of devices, their history, MACs and names. It is storage-neutral: values are JSON
 * shapes, numbers, strings and Date values, never SQL text or SQLite's time text, so that a
 * PostgreSQL implementation can be added beside `SqliteDeviceStore` (sqlite/device-store.ts)
 * without touching its callers (docs/architecture.md lists what else that needs).
 *
 * The scanner writes presence through the presence part (presence.ts), the API through the write
 * methods here. Column names never come from a request: they are the catalogue's.
 */
import type { Period } from '../time.js';
import type { DeviceJson } from '../devices/catalogue.js';
import type { EventJson, SessionJson } from '../devices/history.js';
import type { NameUpdate, StoredDeviceName } from '../devices/presence.js';
import type { DeviceListQuery, SearchColumn } from '../devices/list-query.js';
import type { DeviceCounter, DeviceGroup, DeviceStatus } from '../devices/status.js';

/** Computed per-device counts for one period. */
export interface DeviceStats {
  /** Sessions that overlap the period; a still-open session always counts. */
  readonly devSessions: number;
  /** Events in the period other than Connected/Disconnected. */
  readonly devEvents: number;
  /** `Device Down` events in the period. */
  readonly devDownAlerts: number;
  /** Hours connected within the period, open sessions counted to now, 2 decimals. */
  readonly devPresenceHours: number;
}

/**
 * A device view with how it changes with the clock alone (no write): until `until`, its counts stay
 * as they are and its connected seconds grow by `slope` per second (open sessions add one each;
 * for a period, a closed session that straddles the moving start loses one). That is what lets a
 * cache keep the answer of any period exactly.
 */
export interface TimedView {
  readonly view: DeviceView;
  /** Connected seconds within the period at `now` (whole seconds). */
  readonly seconds: number;
  /** Seconds gained per second until `until`. */
  readonly slope: number;
  /** When the view stops following the rule above; null: never (only a write changes it). */
  readonly until: Date | null;
}

/** One element of devChildrenDynamic / devChildrenNicsDynamic. */
export interface DeviceChild {
  readonly devMac: string;
  readonly devName: string;
  readonly devStatus: DeviceStatus;
  readonly devParentRelType: string;
  readonly devParentPort: number | null;
  readonly devLastIP: string;
}

/** devSleeping and devFlapping: 0/1, computed from the scanner's memory. */
export interface PresenceFlags {
  devSleeping: 0 | 1;
  devFlapping: 0 | 1;
}

/** A device as GET /device/<mac> returns it: stored fields, then the computed ones. */
export type DeviceView = DeviceJson &
  DeviceStats &
  PresenceFlags & {
    devStatus: DeviceStatus;
    devRandomMac: 0 | 1;
    devMacs: string[];
    devChildrenDynamic: DeviceChild[];
    devChildrenNicsDynamic: DeviceChild[];
  };

/** The columns a search looks in, of one device (search-index.ts). */
export type SearchTexts = { readonly devMac: string } & Readonly<Record<SearchColumn, string | null>>;

/**
 * A device as GET /devices lists it: stored fields, devStatus, devRandomMac and the presence flags,
 * no counts or children.
 */
export type DeviceListItem = DeviceJson & PresenceFlags & { devStatus: DeviceStatus; devRandomMac: 0 | 1 };

/** Which rows of a list to return (validated by the caller: offset >= 0, limit >= 1). */
export interface Page {
  readonly offset: number;
  readonly limit: number;
}

/** One page of a list and the number of rows the whole filtered list holds. */
export interface PageResult<T> {
  readonly items: T[];
  readonly total: number;
}

/** The counts of the status counters, keyed by group (status.ts). */
export type DeviceTotals = Readonly<Record<DeviceGroup, number>>;

/** Every device count kept (status.ts `deviceCounters`): the groups, the devStatus values and more. */
export type DeviceCounts = Readonly<Record<DeviceCounter, number>>;

/**
 * A device field's value as the store accepts it: text, a 0/1 flag or a port as numbers, a time as
 * a Date, devCustomProps as its array, or null.
 */
export type DeviceValue = string | number | Date | null | readonly Readonly<Record<string, unknown>>[];

/** Field values keyed by editable catalogue field name. */
export type DeviceChanges = Readonly<Record<string, DeviceValue>>;

export type CreateResult = 'created' | 'exists';

export interface PruneResult {
  readonly events: number;
  readonly sessions: number;
}

/** What changed since the last poll: nothing, these devices' answers, or possibly anything. */
export type Changes = ReadonlySet<string> | 'all';

/** What a shared poll names: the changes, and those of them that were only seen again (`lastSeen`). */
export interface Polled {
  readonly changes: Changes;
  readonly seen: ReadonlyMap<string, string>;
}

/** One consumer's view of what changed: each reader has its own position (see `changeReader`). */
export interface ChangeReader {
  /** The devices whose answers may have changed since this reader's previous poll. */
  poll(): Changes;
  /**
   * The same as `poll` and then `lastSeen`, from a look at the store made after this call. Calls
   * waiting at the same time share one look (SQLite: one read of the WAL-index for every request
   * of an event-loop turn, not one each), so a request that answers from a cache waits for it
   * instead of looking itself. The seen values come with the changes: another caller woken by the
   * same look polls the same reader before this one goes on, and `lastSeen` would be its.
   */
  pollShared(): Promise<Polled>;
  /**
   * Of the devices the latest `poll` named, those whose only change was devLastConnection, each
   * with its new value as the answer shows it: their answers differ from before by that value
   * only. Every other device named must be read again. Absent or empty when the store cannot tell.
   */
  lastSeen?(): ReadonlyMap<string, string>;
}

/** The answer of a merge or a split: the device's MAC and all its MACs, its own first. */
export interface MacsResult {
  readonly devMac: string;
  readonly devMacs: string[];
}

/** One edit for many devices: these field values, or deletion. */
export type BulkEdit = { readonly set: DeviceChanges } | { readonly delete: true };

/** A device a bulk edit could not change, and why (a DomainError code and its sentence). */
export interface BulkFailure {
  readonly mac: string;
  readonly code: string;
  readonly message: string;
}

/** What a bulk edit did: the devices it changed (their devMac) and those it could not. */
export interface BulkResult {
  readonly changed: string[];
  readonly failed: BulkFailure[];
}

/**
 * Every method is asynchronous (a PostgreSQL driver is); each write method is one durable write:
 * its promise settles once the write is on disk (SQLite: group commit, see db/group-commit.ts).
 */
export interface DeviceStore {
  /**
   * The devMac of the device that has `mac`, as its own MAC or as an alias; `mac` itself when no
   * device has it. Every `/device/<mac>` path goes through it once, before anything else.
   */
  resolveMac(mac: string): Promise<string>;
  /** Every alias and the devMac it belongs to, in one read (the scanner maps sightings with it). */
  loadAliases(): Promise<Map<string, string>>;
  /**
   * Moves device `from` into the device that has `to` (own MAC or alias), in one transaction: its
   * MACs become aliases, its events and sessions move, the target's empty fields take from's
   * values, the `from` row is gone. DomainError: not-found when either is missing, invalid when
   * both are the same device, conflict when `from` is an alias (already merged).
   */
  merge(to: string, from: string, now: Date): Promise<MacsResult>;
  /**
   * Makes `alias` of the device that has `mac` a device of its own, with no history. DomainError:
   * not-found when there is no such device, invalid when `alias` is not one of its aliases.
   */
  split(mac: string, alias: string, now: Date): Promise<MacsResult & { readonly split: string }>;
  /** The device with its computed fields, or undefined when there is none. */
  get(mac: string, period: Period, now: Date): Promise<DeviceView | undefined>;
  /** get() plus the open sessions and connected seconds behind devPresenceHours (for caches). */
  getTimed(mac: string, period: Period, now: Date): Promise<TimedView | undefined>;
  /**
   * A new reader of the devices whose answers may have changed since its previous poll, by this
   * process (exactly those) or by another one (`'all'`). Each consumer (the view cache, the list
   * cache, the kept counts) has its own; a reader starts with nothing changed.
   */
  changeReader(): ChangeReader;
  /**
   * Creates a device: unset fields take their catalogue defaults, devFirstConnection and
   * devLastConnection default to `now`, devGUID is a fresh UUID.
   */
  create(mac: string, changes: DeviceChanges, now: Date): Promise<CreateResult>;
  /** Sets the given fields only. False when the device does not exist. */
  update(mac: string, changes: DeviceChanges): Promise<boolean>;
  /**
   * update() of the device `given` names, by its own MAC or one of its aliases (resolveMac): its own
   * MAC when it was updated, undefined when there is no such device. On SQLite the alias is looked up
   * inside the write's transaction, where a lookup costs far less than a read of its own.
   */
  updateResolved(given: string, changes: DeviceChanges): Promise<string | undefined>;
  /** Removes the device, its aliases, events and sessions, and clears its children's devParentMAC. */
  delete(mac: string): Promise<boolean>;
  /** Removes the device's events and sessions; the device stays. False when it does not exist. */
  deleteEvents(mac: string): Promise<boolean>;
  /** devCustomProps back to its catalogue default. False when the device does not exist. */
  resetProps(mac: string): Promise<boolean>;
  /**
   * Copies every stored field but devMac from `from` to `to` (created or replaced), giving the
   * target a fresh devGUID. The target's own events and sessions are kept: they record what was
   * observed for that MAC. False (and nothing changed) when `from` does not exist.
   */
  copy(from: string, to: string): Promise<boolean>;
  /**
   * Applies one edit to each device (found by its own MAC or an alias), in one durable write: the
   * devices that exist change, one that is gone (deleted meanwhile) or would break a rule
   * (PARENT_CYCLE) is reported in `failed` and left as it was.
   */
  bulkEdit(macs: readonly string[], edit: BulkEdit): Promise<BulkResult>;
  listChildren(mac: string): Promise<DeviceChild[]>;
  stats(mac: string, period: Period, now: Date): Promise<DeviceStats>;
  /**
   * Devices filtered by status or group and search text, sorted (MAC order by default); `total`
   * counts the filtered list.
   */
  listDevices(query: DeviceListQuery, page: Page): Promise<PageResult<DeviceListItem>>;
  /**
   * The MACs of the devices `listDevices` lists for `query`, in its order (every page of it). The
   * list cache keeps this and the items apart, so that a page is a slice.
   */
  listOrder(query: DeviceListQuery): Promise<string[]>;
  /** The list items of these devices, in the same order; undefined for a MAC that is no device. */
  listItems(macs: readonly string[]): Promise<(DeviceListItem | undefined)[]>;
  /**
   * The searched columns (list-query.ts `searchColumns`) of these devices (a MAC that is no device
   * is left out), or of every device when `macs` is undefined.
   */
  searchTexts(macs?: readonly string[]): Promise<SearchTexts[]>;
  /** How many devices each status counter holds: the counts below, never a scan per call. */
  totals(): Promise<DeviceTotals>;
  /**
   * Every count of `deviceCounters`, kept as the devices change (this process's writes device by
   * device, another process's commits by a recount), so that reading them costs no scan.
   */
  counts(): Promise<DeviceCounts>;
  /**
   * The device's events at or after the period start (the rule of devEvents, without its type
   * filter), newest first. Undefined when the device does not exist.
   */
  listEvents(mac: string, period: Period, now: Date, page: Page): Promise<PageResult<EventJson> | undefined>;
  /**
   * The device's sessions that overlap the period (the rule of devSessions, so `total` equals
   * devSessions for the same period), newest connection first. Undefined when the device does
   * not exist.
   */
  listSessions(
    mac: string,
    period: Period,
    now: Date,
    page: Page,
  ): Promise<PageResult<SessionJson> | undefined>;

  /** Every device's name and its source (automatic naming decides from them), in one read. */
  loadNames(): Promise<Map<string, StoredDeviceName>>;
  /** One device's name and its source; undefined when there is no such device. */
  getName(mac: string): Promise<StoredDeviceName | undefined>;
  /**
   * Stores an automatic name for the device, decided by `decide` from its stored name inside the
   * write (the name may have changed while the name sources answered); `decide` is pure and never
   * writes a user or import name over (that is checked in the write itself too). The device's
   * stored name afterwards; undefined when there is no such device.
   */
  resolveName(
    mac: string,
    decide: (stored: StoredDeviceName) => NameUpdate | undefined,
  ): Promise<StoredDeviceName | undefined>;
}

/** Connected seconds as hours with 2 decimals (devPresenceHours). */
export function presenceHours(seconds: number): number {
  return Math.round(seconds / 36) / 100;
}

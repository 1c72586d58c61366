/**
 * The store's asynchronous device and presence interfaces over the synchronous SQLite engine
 * (devices.ts). better-sqlite3 answers at once, so each read is a resolved promise; each write
 * method is one group commit (`SqliteDevices.write`), settled once it is on disk. A cycle's
 * extras (watch memory, notifications) are written inside its transaction, before COMMIT.
 */
import type { NameUpdate, PresenceChanges, StoredDeviceName } from '../../devices/presence.js';
import type { DeviceListQuery } from '../../devices/list-query.js';
import type { Period } from '../../time.js';
import type {
  BulkEdit,
  BulkResult,
  ChangeReader,
  CreateResult,
  DeviceChanges,
  DeviceChild,
  DeviceCounts,
  DeviceListItem,
  DeviceStats,
  DeviceStore,
  DeviceTotals,
  DeviceView,
  MacsResult,
  Page,
  PageResult,
  PruneResult,
  SearchTexts,
  TimedView,
} from '../devices.js';
import type { EventJson, SessionJson } from '../../devices/history.js';
import type { KnownDevice } from '../../devices/presence.js';
import type { PresenceExtras, PresenceStore } from '../presence.js';
import type { SqliteDevices } from './devices.js';
import type { SqliteOutboxStore } from './outbox.js';
import type { SqliteWatchStore } from './watch.js';
import type { SqliteProbeStore } from './probes.js';

/** A synchronous answer as a promise: its value, or its exception as a rejection. */
export function settled<T>(read: () => T): Promise<T> {
  try {
    return Promise.resolve(read());
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}

/** Where a cycle's extras go: the watch memory and the outbox of the same connection. */
export interface CycleParts {
  readonly watch?: Pick<SqliteWatchStore, 'remember'>;
  readonly outbox?: Pick<SqliteOutboxStore, 'writeRequested'>;
  readonly probes?: Pick<SqliteProbeStore, 'recordCycleNow'>;
}

/** Applies a cycle and its extras in one transaction (synchronous: call inside a write or alone). */
export function applyCycle(
  core: SqliteDevices,
  parts: CycleParts,
  changes: PresenceChanges,
  extras: PresenceExtras = {},
): void {
  core.presence.apply(changes, {
    beforeCommit: () => {
      for (const { kind, key, value } of extras.memory ?? []) parts.watch?.remember(kind, key, value);
      if (extras.notify !== undefined) parts.outbox?.writeRequested(extras.notify);
      for (const notice of extras.notices ?? []) parts.outbox?.writeRequested(notice);
      if (extras.probeCycle !== undefined) parts.probes?.recordCycleNow(extras.probeCycle);
    },
    testOnlyBeforeCommit: extras.testOnlyBeforeCommit,
  });
}

export class SqliteDeviceStore implements DeviceStore, PresenceStore {
  constructor(
    readonly core: SqliteDevices,
    private readonly parts: CycleParts = {},
  ) {}

  resolveMac(mac: string): Promise<string> {
    return settled(() => this.core.resolveMac(mac));
  }

  loadAliases(): Promise<Map<string, string>> {
    return settled(() => this.core.loadAliases());
  }

  merge(to: string, from: string, now: Date): Promise<MacsResult> {
    return this.core.write(() => this.core.merge(to, from, now));
  }

  split(mac: string, alias: string, now: Date): Promise<MacsResult & { readonly split: string }> {
    return this.core.write(() => this.core.split(mac, alias, now));
  }

  get(mac: string, period: Period, now: Date): Promise<DeviceView | undefined> {
    return settled(() => this.core.get(mac, period, now));
  }

  getTimed(mac: string, period: Period, now: Date): Promise<TimedView | undefined> {
    return settled(() => this.core.getTimed(mac, period, now));
  }

  changeReader(): ChangeReader {
    return this.core.changeReader();
  }

  create(mac: string, changes: DeviceChanges, now: Date): Promise<CreateResult> {
    return this.core.write(() => this.core.create(mac, changes, now));
  }

  update(mac: string, changes: DeviceChanges): Promise<boolean> {
    return this.core.write(() => this.core.update(mac, changes));
  }

  updateResolved(given: string, changes: DeviceChanges): Promise<string | undefined> {
    return this.core.write(() => {
      const mac = this.core.resolveMac(given);
      return this.core.update(mac, changes) ? mac : undefined;
    });
  }

  delete(mac: string): Promise<boolean> {
    return this.core.write(() => this.core.delete(mac));
  }

  deleteEvents(mac: string): Promise<boolean> {
    return this.core.write(() => this.core.deleteEvents(mac));
  }

  resetProps(mac: string): Promise<boolean> {
    return this.core.write(() => this.core.resetProps(mac));
  }

  copy(from: string, to: string): Promise<boolean> {
    return this.core.write(() => this.core.copy(from, to));
  }

  bulkEdit(macs: readonly string[], edit: BulkEdit): Promise<BulkResult> {
    return this.core.write(() => this.core.bulkEdit(macs, edit));
  }

  listChildren(mac: string): Promise<DeviceChild[]> {
    return settled(() => this.core.listChildren(mac));
  }

  stats(mac: string, period: Period, now: Date): Promise<DeviceStats> {
    return settled(() => this.core.stats(mac, period, now));
  }

  listDevices(query: DeviceListQuery, page: Page): Promise<PageResult<DeviceListItem>> {
    return settled(() => this.core.listDevices(query, page));
  }

  listOrder(query: DeviceListQuery): Promise<string[]> {
    return settled(() => this.core.listOrder(query));
  }

  listItems(macs: readonly string[]): Promise<(DeviceListItem | undefined)[]> {
    return settled(() => this.core.listItems(macs));
  }

  searchTexts(macs?: readonly string[]): Promise<SearchTexts[]> {
    return settled(() => this.core.searchTexts(macs));
  }

  async totals(): Promise<DeviceTotals> {
    return this.core.totals(await this.core.countsShared());
  }

  counts(): Promise<DeviceCounts> {
    return this.core.countsShared();
  }

  listEvents(mac: string, period: Period, now: Date, page: Page): Promise<PageResult<EventJson> | undefined> {
    return settled(() => this.core.listEvents(mac, period, now, page));
  }

  listSessions(
    mac: string,
    period: Period,
    now: Date,
    page: Page,
  ): Promise<PageResult<SessionJson> | undefined> {
    return settled(() => this.core.listSessions(mac, period, now, page));
  }

  loadNames(): Promise<Map<string, StoredDeviceName>> {
    return settled(() => this.core.loadNames());
  }

  getName(mac: string): Promise<StoredDeviceName | undefined> {
    return settled(() => this.core.getName(mac));
  }

  resolveName(
    mac: string,
    decide: (stored: StoredDeviceName) => NameUpdate | undefined,
  ): Promise<StoredDeviceName | undefined> {
    return this.core.write(() => {
      const stored = this.core.getName(mac);
      if (stored === undefined) return undefined;
      const update = decide(stored);
      if (update !== undefined) this.core.setName(update);
      return this.core.getName(mac);
    });
  }

  loadPresence(toggleSince: Date | null = null): Promise<Map<string, KnownDevice>> {
    return settled(() => this.core.presence.load(toggleSince));
  }

  loadSitePresence(
    site: string | null,
    macs: readonly string[],
    toggleSince: Date | null = null,
  ): Promise<Map<string, KnownDevice>> {
    return settled(() => this.core.presence.loadSite(site, macs, toggleSince));
  }

  /**
   * Its own IMMEDIATE transaction with synchronous=FULL, as before the gate (not a group commit):
   * a cycle is one large write, durable when it returns.
   */
  applyPresence(changes: PresenceChanges, extras?: PresenceExtras): Promise<void> {
    return settled(() => {
      applyCycle(this.core, this.parts, changes, extras);
    });
  }

  pruneHistory(before: Date, limit: number): Promise<PruneResult> {
    return settled(() => this.core.presence.pruneHistory(before, limit));
  }

  pruneScanMemory(): Promise<void> {
    return settled(() => {
      this.core.presence.pruneScanMemory();
    });
  }
}

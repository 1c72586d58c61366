/**
 * The devStatus rule, in one place: GET /device, the children arrays and the device
 * lists use it. `deviceStatus` applies it to one row in JavaScript; the SQLite store's
 * `deviceStatusSql` (src/store/sqlite/status-sql.ts) is the same rule as a SQL predicate, so that
 * GET /devices?status= filters (and counts) in the database instead of loading every device. A
 * test checks that the two agree on every combination of the two flags.
 */

export const deviceStatuses = ['On-line', 'Off-line', 'Down'] as const;
export type DeviceStatus = (typeof deviceStatuses)[number];

/** A flag as stored (0/1) or as a boolean; anything other than 1/true counts as unset. */
type Flag = number | boolean | null | undefined;

/**
 * `Down` when devAlertDown is set and the device was absent from the last scan; otherwise
 * `On-line` when it was present in the last scan; otherwise `Off-line`.
 */
export function deviceStatus(presentLastScan: Flag, alertDown: Flag): DeviceStatus {
  const present = presentLastScan === 1 || presentLastScan === true;
  if (present) return 'On-line';
  return alertDown === 1 || alertDown === true ? 'Down' : 'Off-line';
}

/**
 * The device groups of the status counters (`GET /devices/totals`, the console's counters,
 * `GET /devices?status=<group>` and NetAlertX's `/devices/by-status`), in the order of the totals
 * array `[devices, connected, favorites, new, down, archived]`. `my` is NetAlertX's name for
 * "devices": every device that is not archived.
 */
export const deviceGroups = ['my', 'connected', 'favorites', 'new', 'down', 'archived'] as const;
export type DeviceGroup = (typeof deviceGroups)[number];

/** The name of each group in `GET /devices/totals/named`. */
export const totalsNames: Readonly<Record<DeviceGroup, string>> = {
  my: 'devices',
  connected: 'connected',
  favorites: 'favorites',
  new: 'new',
  down: 'down',
  archived: 'archived',
};

/** The counts of the groups as the bare array of `GET /devices/totals`, in `deviceGroups` order. */
export function totalsArray(totals: Readonly<Record<DeviceGroup, number>>): number[] {
  return deviceGroups.map((group) => totals[group]);
}

/**
 * NetAlertX's 2026 by-status names for presence, among devices that are not archived: `online`
 * (present in the last scan, the `connected` group) and `offline` (absent from it, down or not).
 */
export const presenceGroups = ['online', 'offline'] as const;
export type PresenceGroup = (typeof presenceGroups)[number];

/**
 * Every device count netkeep keeps (the device store's `counts()`): the groups of the status
 * counters, each devStatus (archived devices included, as `/metrics`' netkeep_devices counts them)
 * and `absent` (not archived and absent from the last scan: NetAlertX's "offline" gauge). Totals,
 * the console's counters and `/metrics` all read these.
 */
export const deviceCounters = [...deviceGroups, ...deviceStatuses, 'absent'] as const;
export type DeviceCounter = (typeof deviceCounters)[number];

/** The stored flags the counters read (0/1 as stored; anything other than 1 counts as unset). */
export interface CounterFlags {
  readonly devPresentLastScan: Flag;
  readonly devAlertDown: Flag;
  readonly devIsArchived: Flag;
  readonly devFavorite: Flag;
  readonly devIsNew: Flag;
}

/**
 * Whether a device with these flags is in `counter`: the rule of `deviceCounters` in JavaScript
 * (the SQLite store's predicates are `status-sql.ts`; a test checks that both agree on every
 * combination). Every group but `archived` leaves archived devices out.
 */
export function inCounter(counter: DeviceCounter, flags: CounterFlags): boolean {
  const set = (flag: Flag): boolean => flag === 1 || flag === true;
  const active = !set(flags.devIsArchived);
  const status = deviceStatus(flags.devPresentLastScan, flags.devAlertDown);
  switch (counter) {
    case 'my':
      return active;
    case 'connected':
      return active && status === 'On-line';
    case 'favorites':
      return active && set(flags.devFavorite);
    case 'new':
      return active && set(flags.devIsNew);
    case 'down':
      return active && status === 'Down';
    case 'archived':
      return !active;
    case 'absent':
      return active && !set(flags.devPresentLastScan);
    default:
      return status === counter;
  }
}

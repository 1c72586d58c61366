/**
 * The status rules of src/devices/status.ts as SQL predicates over a Devices row (the SQLite store's
 * filters and counts). Every text is built from constants only (never from a request).
 */
import {
  deviceCounters,
  deviceGroups,
  deviceStatuses,
  type DeviceCounter,
  type DeviceGroup,
  type DeviceStatus,
  type PresenceGroup,
} from '../../devices/status.js';

/**
 * The SQL predicate that holds exactly for the rows whose status is `status`. `IS 1` / `IS NOT 1`
 * mirror "anything other than 1 counts as unset" above, NULL included. The text is built from
 * constants only (never from a request): the status is one of three literals and the column names
 * are the catalogue's.
 */
export function deviceStatusSql(
  status: DeviceStatus,
  columns: { readonly presentLastScan: string; readonly alertDown: string } = {
    presentLastScan: 'devPresentLastScan',
    alertDown: 'devAlertDown',
  },
): string {
  const { presentLastScan: present, alertDown: down } = columns;
  switch (status) {
    case 'On-line':
      return `${present} IS 1`;
    case 'Down':
      return `(${present} IS NOT 1 AND ${down} IS 1)`;
    case 'Off-line':
      return `(${present} IS NOT 1 AND ${down} IS NOT 1)`;
  }
}

/**
 * The SQL predicate of each group over the Devices table. Built from constants only. Every group
 * but `archived` leaves archived devices out; `down` is the `Down` devStatus among those.
 */
export function deviceGroupSql(group: DeviceGroup): string {
  const active = 'devIsArchived IS NOT 1';
  switch (group) {
    case 'my':
      return active;
    case 'connected':
      return `(${active} AND ${deviceStatusSql('On-line')})`;
    case 'favorites':
      return `(${active} AND devFavorite IS 1)`;
    case 'new':
      return `(${active} AND devIsNew IS 1)`;
    case 'down':
      return `(${active} AND ${deviceStatusSql('Down')})`;
    case 'archived':
      return 'devIsArchived IS 1';
  }
}

/** One pass over Devices counting every group: the totals in `deviceGroups` order. */
export const deviceTotalsSql = `SELECT ${deviceGroups
  .map((group) => `COUNT(*) FILTER (WHERE ${deviceGroupSql(group)}) AS "${group}"`)
  .join(', ')} FROM Devices`;

/** The SQL predicate of a presence group. Built from constants only. */
export function presenceGroupSql(group: PresenceGroup): string {
  return group === 'online'
    ? deviceGroupSql('connected')
    : `(devIsArchived IS NOT 1 AND NOT (${deviceStatusSql('On-line')}))`;
}

/** The SQL predicate of each counter over the Devices table. Built from constants only. */
function deviceCounterSql(counter: DeviceCounter): string {
  if ((deviceGroups as readonly string[]).includes(counter)) return deviceGroupSql(counter as DeviceGroup);
  if ((deviceStatuses as readonly string[]).includes(counter))
    return deviceStatusSql(counter as DeviceStatus);
  return 'devIsArchived IS NOT 1 AND devPresentLastScan IS NOT 1';
}

/**
 * One pass over Devices counting every counter: the counts in `deviceCounters` order. The
 * reference the kept counts are tested against (and what they are recounted with).
 */
export const deviceCountsSql = `SELECT ${deviceCounters
  .map((counter, i) => `COUNT(*) FILTER (WHERE ${deviceCounterSql(counter)}) AS c${i}`)
  .join(', ')} FROM Devices`;

/**
 * Each device's counters as bits (bit i: in `deviceCounters[i]`), for the store to keep the counts
 * device by device: `@mac` one device, or every device without the WHERE.
 */
export const deviceCounterBitsSql = `SELECT devMac, ${deviceCounters
  .map((counter, i) => `((${deviceCounterSql(counter)}) << ${i})`)
  .join(' | ')} AS bits FROM Devices`;

/**
 * devSleeping and devFlapping as SQL over a Devices row, for GET /device, the lists and
 * their `?sleeping=` / `?flapping=` filters. Both read the scanner's memory (ScanState): a device
 * sleeps while it has devCanSleep, is still present and was missed by the last cycle(s) (the
 * scanner keeps it present only inside its SLEEP_MINUTES window); it flaps while the scanner's
 * last evaluation of its recent events said so.
 */
export const presenceFlagSql = {
  devSleeping: `(devCanSleep = 1 AND devPresentLastScan = 1
    AND EXISTS (SELECT 1 FROM ScanState WHERE ScanState.mac = devMac AND ScanState.misses > 0))`,
  devFlapping: 'EXISTS (SELECT 1 FROM ScanState WHERE ScanState.mac = devMac AND ScanState.flapping = 1)',
} as const;
export type PresenceFlag = keyof typeof presenceFlagSql;

/** The computed flags as extra result columns (`..., <sql> AS devSleeping, <sql> AS devFlapping`). */
export const presenceFlagColumns = Object.entries(presenceFlagSql)
  .map(([name, sql]) => `${sql} AS ${name}`)
  .join(', ');

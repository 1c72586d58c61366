/**
 * The devStatus rule, in one place: GET /device, the children arrays and the device
 * lists use it. `deviceStatus` applies it to one row in JavaScript;
 * `deviceStatusSql` is the same rule as a SQL predicate, so that GET /devices?status= filters (and
 * counts) in the database instead of loading every device. A test checks that the two agree on
 * every combination of the two flags.
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

/**
 * The devStatus rule (DESIGN 4), in one place: GET /device, the children arrays, the presence
 * scanner and the device lists all use it.
 */

export type DeviceStatus = 'On-line' | 'Off-line' | 'Down';

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

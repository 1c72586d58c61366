/**
 * Which scan events are notified, as pure logic (tested as a table):
 * - `New Device` always;
 * - `Device Down`, `Down Reconnected` and `Flapping` when the device's devAlertDown is set;
 * - `Connected`, `Disconnected`, `IP Changed` and `MAC Linked` when its devAlertEvents is set;
 * - NOTIFY_EVENTS narrows all of this globally (a type it does not list is never notified);
 * - devSkipRepeated = N hours > 0: an event less than N hours after the device's previous *sent*
 *   notification (devLastNotification) is recorded as skipped instead of sent. New Device and
 *   Device Down are never skipped: they are the two messages nobody wants to miss.
 * - the security watch's types (IP Conflict, Gateway Changed, Ports Changed, Rogue DHCP) always,
 *   whatever the device's flags, and never skipped: a device's owner cannot silence an attack on it. A
 *   devLastNotification in the future (clock set back) counts as within the window.
 * - While the device flaps, its Connected, Disconnected, Device Down and Down
 *   Reconnected are recorded as skipped for that reason (`skip-flapping`); its one `Flapping`
 *   event, like New Device and Device Down otherwise, is never skipped by devSkipRepeated.
 */
import type { NotifiableEventType } from '../config.js';
import type { EventType } from '../scanner/state-machine.js';

/** The device's alert settings, as stored. */
export interface AlertSettings {
  readonly alertEvents: boolean;
  readonly alertDown: boolean;
  /** devSkipRepeated: hours, 0 = off. */
  readonly skipRepeatedHours: number;
  /** devLastNotification; null when nothing was ever sent for the device. */
  readonly lastNotification: Date | null;
  /** The device flaps (as the cycle that wrote the event left it). */
  readonly flapping?: boolean;
}

export interface RuleOptions {
  /** NOTIFY_EVENTS. */
  readonly enabledTypes: ReadonlySet<NotifiableEventType>;
  readonly now: Date;
}

/**
 * `notify`: send it; `skip`: record it as skipped (devSkipRepeated); `skip-flapping`: record it as
 * skipped because the device flaps; `ignore`: not a notification at all.
 */
export type Decision = 'notify' | 'skip' | 'skip-flapping' | 'ignore';

/** The security watch's event types. */
export const securityEventTypes: readonly EventType[] = [
  'IP Conflict',
  'Gateway Changed',
  'Ports Changed',
  'Rogue DHCP',
];
const neverSkipped: ReadonlySet<EventType> = new Set<EventType>([
  'New Device',
  'Device Down',
  ...securityEventTypes,
  'Flapping',
]);
const quietWhileFlapping: ReadonlySet<EventType> = new Set<EventType>([
  'Connected',
  'Disconnected',
  'Device Down',
  'Down Reconnected',
]);

/** Whether the device's flags ask for this event type at all. */
function wanted(type: EventType, settings: AlertSettings): boolean {
  switch (type) {
    case 'New Device':
    case 'IP Conflict':
    case 'Gateway Changed':
    case 'Ports Changed':
    case 'Rogue DHCP':
      return true;
    case 'Device Down':
    case 'Down Reconnected':
    case 'Flapping':
      return settings.alertDown;
    case 'Connected':
    case 'Disconnected':
    case 'IP Changed':
    case 'MAC Linked':
      return settings.alertEvents;
  }
}

export function decide(type: EventType, settings: AlertSettings, options: RuleOptions): Decision {
  if (!options.enabledTypes.has(type) || !wanted(type, settings)) return 'ignore';
  if (settings.flapping === true && quietWhileFlapping.has(type)) return 'skip-flapping';
  if (neverSkipped.has(type) || settings.skipRepeatedHours <= 0 || settings.lastNotification === null)
    return 'notify';
  const sinceLastMs = options.now.getTime() - settings.lastNotification.getTime();
  return sinceLastMs < settings.skipRepeatedHours * 3_600_000 ? 'skip' : 'notify';
}

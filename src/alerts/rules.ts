/**
 * Which scan events are notified, as pure logic (tested as a table):
 * - `New Device` always;
 * - `Device Down` and `Down Reconnected` when the device's devAlertDown is set;
 * - `Connected`, `Disconnected`, `IP Changed` and `MAC Linked` when its devAlertEvents is set;
 * - NOTIFY_EVENTS narrows all of this globally (a type it does not list is never notified);
 * - devSkipRepeated = N hours > 0: an event less than N hours after the device's previous *sent*
 *   notification (devLastNotification) is recorded as skipped instead of sent. New Device and
 *   Device Down are never skipped: they are the two messages nobody wants to miss. A
 *   devLastNotification in the future (clock set back) counts as within the window.
 */
import type { EventType } from '../scanner/state-machine.js';

/** The device's alert settings, as stored. */
export interface AlertSettings {
  readonly alertEvents: boolean;
  readonly alertDown: boolean;
  /** devSkipRepeated: hours, 0 = off. */
  readonly skipRepeatedHours: number;
  /** devLastNotification; null when nothing was ever sent for the device. */
  readonly lastNotification: Date | null;
}

export interface RuleOptions {
  /** NOTIFY_EVENTS. */
  readonly enabledTypes: ReadonlySet<EventType>;
  readonly now: Date;
}

/** `notify`: send it; `skip`: record it as skipped; `ignore`: not a notification at all. */
export type Decision = 'notify' | 'skip' | 'ignore';

const neverSkipped: ReadonlySet<EventType> = new Set<EventType>(['New Device', 'Device Down']);

/** Whether the device's flags ask for this event type at all. */
function wanted(type: EventType, settings: AlertSettings): boolean {
  switch (type) {
    case 'New Device':
      return true;
    case 'Device Down':
    case 'Down Reconnected':
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
  if (neverSkipped.has(type) || settings.skipRepeatedHours <= 0 || settings.lastNotification === null)
    return 'notify';
  const sinceLastMs = options.now.getTime() - settings.lastNotification.getTime();
  return sinceLastMs < settings.skipRepeatedHours * 3_600_000 ? 'skip' : 'notify';
}

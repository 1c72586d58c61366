/** The notification rules as a table: every event type x flag combination, skip windows, NOTIFY_EVENTS. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decide, type AlertSettings, type Decision } from '../../src/alerts/rules.js';
import { eventTypes as notifiableEventTypes } from '../../src/devices/history.js';
import type { EventType } from '../../src/scanner/state-machine.js';

const now = new Date('2025-03-01T12:00:00Z');
const all = new Set<EventType>(notifiableEventTypes);
const hoursAgo = (h: number): Date => new Date(now.getTime() - h * 3_600_000);

function settings(overrides: Partial<AlertSettings> = {}): AlertSettings {
  return { alertEvents: false, alertDown: false, skipRepeatedHours: 0, lastNotification: null, ...overrides };
}

/** Which flag each type needs: none (always), devAlertDown, or devAlertEvents. */
const needs: Record<EventType, 'none' | 'down' | 'events'> = {
  'New Device': 'none',
  'Device Down': 'down',
  'Down Reconnected': 'down',
  Connected: 'events',
  Disconnected: 'events',
  'IP Changed': 'events',
  Flapping: 'down',
  'IP Conflict': 'none',
  'Gateway Changed': 'none',
  'Ports Changed': 'none',
  'Rogue DHCP': 'none',
  'MAC Linked': 'events',
};

describe('alert rules', () => {
  test('every event type x devAlertEvents x devAlertDown', () => {
    for (const type of notifiableEventTypes)
      for (const alertEvents of [false, true])
        for (const alertDown of [false, true]) {
          const need = needs[type];
          const expected: Decision =
            need === 'none' || (need === 'down' && alertDown) || (need === 'events' && alertEvents)
              ? 'notify'
              : 'ignore';
          assert.equal(
            decide(type, settings({ alertEvents, alertDown }), { enabledTypes: all, now }),
            expected,
            `${type} events=${alertEvents} down=${alertDown}`,
          );
        }
  });

  test('NOTIFY_EVENTS narrows every type, whatever the flags', () => {
    for (const type of notifiableEventTypes) {
      const without = new Set<EventType>(notifiableEventTypes.filter((t) => t !== type));
      const flags = settings({ alertEvents: true, alertDown: true });
      assert.equal(decide(type, flags, { enabledTypes: without, now }), 'ignore', type);
      assert.equal(decide(type, flags, { enabledTypes: new Set([type]), now }), 'notify', type);
    }
    assert.equal(decide('New Device', settings(), { enabledTypes: new Set(), now }), 'ignore');
  });

  test('devSkipRepeated: within N hours of the last sent notification is skipped, from N hours on sent', () => {
    const flags = { alertEvents: true, alertDown: true };
    const rows: Array<[hours: number, last: Date | null, expected: Decision]> = [
      [0, hoursAgo(0.01), 'notify'], // off
      [1, null, 'notify'], // nothing sent yet
      [1, hoursAgo(0.5), 'skip'],
      [1, hoursAgo(0.999), 'skip'],
      [1, hoursAgo(1), 'notify'], // exactly N hours: the window is over
      [1, hoursAgo(2), 'notify'],
      [24, hoursAgo(23.9), 'skip'],
      [24, hoursAgo(24.1), 'notify'],
      [168, hoursAgo(100), 'skip'],
      [8760, hoursAgo(8759), 'skip'],
      [8760, hoursAgo(8761), 'notify'],
      [8, hoursAgo(-1), 'skip'], // a last notification in the future (clock set back) counts as recent
    ];
    for (const [hours, last, expected] of rows)
      for (const type of ['Connected', 'Disconnected', 'IP Changed', 'Down Reconnected'] as const)
        assert.equal(
          decide(type, settings({ ...flags, skipRepeatedHours: hours, lastNotification: last }), {
            enabledTypes: all,
            now,
          }),
          expected,
          `${type} skip=${hours}h last=${last?.toISOString() ?? 'null'}`,
        );
  });

  test('New Device, Device Down, Flapping and the security watch types are never skipped', () => {
    const never = [
      'New Device',
      'Device Down',
      'Flapping',
      'IP Conflict',
      'Gateway Changed',
      'Ports Changed',
      'Rogue DHCP',
    ] as const;
    for (const type of never)
      assert.equal(
        decide(
          type,
          settings({ alertDown: true, skipRepeatedHours: 8760, lastNotification: hoursAgo(0.001) }),
          { enabledTypes: all, now },
        ),
        'notify',
        type,
      );
  });

  test('a flapping device: its comings and goings are skipped as flapping, the rest as before', () => {
    const flags = settings({ alertEvents: true, alertDown: true, flapping: true });
    const rows: Array<[EventType, Decision]> = [
      ['Connected', 'skip-flapping'],
      ['Disconnected', 'skip-flapping'],
      ['Device Down', 'skip-flapping'],
      ['Down Reconnected', 'skip-flapping'],
      ['Flapping', 'notify'],
      ['IP Changed', 'notify'],
      ['New Device', 'notify'],
    ];
    for (const [type, expected] of rows)
      assert.equal(decide(type, flags, { enabledTypes: all, now }), expected, type);
    // Flags that ignore an event still ignore it; NOTIFY_EVENTS still narrows.
    assert.equal(decide('Connected', settings({ flapping: true }), { enabledTypes: all, now }), 'ignore');
    assert.equal(decide('Flapping', settings({ flapping: true }), { enabledTypes: all, now }), 'ignore');
    assert.equal(
      decide('Device Down', flags, { enabledTypes: new Set<EventType>(['Connected']), now }),
      'ignore',
    );
  });

  test('a skip window never makes an event notified that the flags ignore', () => {
    const decision = decide(
      'Connected',
      settings({ alertEvents: false, skipRepeatedHours: 24, lastNotification: hoursAgo(1) }),
      { enabledTypes: all, now },
    );
    assert.equal(decision, 'ignore');
  });
});

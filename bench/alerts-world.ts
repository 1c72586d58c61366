/**
 * The alert benchmark's world, shared by the bench process and its server child: a seeded
 * database of 5,000 devices (2,000 present with open sessions, every tenth with devAlertDown) and
 * 100,000 events, and the measured cycle's observations: 1,000 of the present devices stay, 1,000
 * new devices appear and the other 1,000 present ones depart. With the catalogue defaults
 * (devAlertEvents 1) every one of the 2,000 events is notified.
 */
import type { Observation } from '../src/scanner/discovery.js';
import { dbTime } from '../src/time.js';
import { ip, mac } from './scan.js';
import { seedDatabaseFile } from './seed.js';

export const deviceCount = 5_000;
const presentBefore = 2_000;
const eventCount = 100_000;
export const newDevices = 1_000;
export const departures = 1_000;

export function seedAlertsWorld(file: string): void {
  const start = Date.parse('2025-01-01T00:00:00Z');
  seedDatabaseFile(file, (seeder) => {
    for (let i = 0; i < deviceCount; i++) {
      seeder.device(mac(i), {
        devLastIP: ip(i),
        devFirstConnection: '2025-01-01 00:00:00',
        devLastConnection: '2025-06-01 00:00:00',
        devPresentLastScan: i < presentBefore ? 1 : 0,
        devAlertDown: i % 10 === 0 ? 1 : 0,
        devIsNew: 0,
      });
      if (i < presentBefore) seeder.session(mac(i), ip(i), '2025-06-01 00:00:00', null);
    }
    for (let e = 0; e < eventCount; e++) {
      const device = e % deviceCount;
      seeder.event(
        mac(device),
        ip(device),
        dbTime(new Date(start + e * 60_000)),
        e % 2 ? 'Connected' : 'Disconnected',
      );
    }
  });
}

/** 1,000..1,999 stay, 5,000..5,999 are new; 0..999 (present before) depart. */
export function measuredObservations(): Map<string, Observation> {
  const seen = new Map<string, Observation>();
  for (let i = departures; i < presentBefore; i++)
    seen.set(mac(i), { ips: [ip(i)], vendor: '', source: 'arp-scan' });
  for (let i = deviceCount; i < deviceCount + newDevices; i++)
    seen.set(mac(i), { ips: [ip(i)], vendor: 'Bench Vendor', source: 'arp-scan' });
  return seen;
}

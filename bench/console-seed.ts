/**
 * A household-and-office-like inventory for the console benchmark and its screenshots: devices
 * with real-looking names, vendors, owners and types, a mix of statuses (new, favourite, down,
 * archived), and a few weeks of sessions and events, so that every page has something to show.
 * Deterministic (a fixed PRNG), so runs are comparable.
 */
import { join } from 'node:path';
import { dbTime } from '../src/time.js';
import { seedDatabaseFile } from './seed.js';

const kinds = [
  { type: 'Phone', vendor: 'Apple, Inc.', name: 'iPhone' },
  { type: 'Phone', vendor: 'Samsung Electronics Co.,Ltd', name: 'Galaxy' },
  { type: 'Laptop', vendor: 'Dell Inc.', name: 'Latitude' },
  { type: 'Laptop', vendor: 'Lenovo', name: 'ThinkPad' },
  { type: 'TV', vendor: 'LG Electronics', name: 'Living room TV' },
  { type: 'Printer', vendor: 'Brother Industries, LTD.', name: 'Printer' },
  { type: 'NAS', vendor: 'Synology Incorporated', name: 'DiskStation' },
  { type: 'Router', vendor: 'Ubiquiti Inc', name: 'Access point' },
  { type: 'IoT', vendor: 'Espressif Inc.', name: 'Smart plug' },
  { type: 'Camera', vendor: 'Hangzhou Hikvision', name: 'Camera' },
  { type: 'Game Console', vendor: 'Sony Interactive Entertainment', name: 'PlayStation' },
  { type: 'Speaker', vendor: 'Sonos, Inc.', name: 'Sonos' },
];
const owners = ['Alice', 'Bob', 'Carol', 'Dave', 'Erin', 'Frank', 'Office', 'Kim', ''];
const rooms = ['Living room', 'Office', 'Kitchen', 'Bedroom', 'Garage', 'Attic'];

/** MAC of the i-th seeded device. */
export function consoleMac(i: number): string {
  const hex = (i + 0x1000).toString(16).padStart(6, '0');
  return `3c:22:fb:${hex.slice(0, 2)}:${hex.slice(2, 4)}:${hex.slice(4, 6)}`;
}

/** Fills `$dataDir/netkeep.db` with `devices` devices and `historyDays` of their history. */
export function seedConsoleData(dataDir: string, devices: number, now = Date.now(), historyDays = 21): void {
  let seed = 7;
  const random = (): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const hour = 3_600_000;
  seedDatabaseFile(join(dataDir, 'netkeep.db'), (seeder) => {
    for (let i = 0; i < devices; i++) {
      const kind = kinds[i % kinds.length] ?? kinds[0];
      const owner = pick(owners);
      const mac = consoleMac(i);
      const ip = `192.168.${1 + Math.floor(i / 250)}.${(i % 250) + 2}`;
      const archived = i % 41 === 40;
      const present = !archived && random() < 0.7;
      const alertDown = kind?.type === 'NAS' || kind?.type === 'Camera' || kind?.type === 'Router' ? 1 : 0;
      const firstSeen = now - Math.floor((3 + random() * 60) * 24 * hour);
      const lastSeen = present ? now - 60_000 : now - Math.floor(random() * 72 * hour);
      seeder.device(mac, {
        devName: owner && kind ? `${owner}'s ${kind.name}` : `${kind?.name ?? 'Device'} ${i + 1}`,
        devOwner: owner,
        devType: kind?.type ?? '',
        devVendor: kind?.vendor ?? '',
        devLastIP: ip,
        devLocation: pick(rooms),
        // The hub's own scans mark what they see with SITE_NAME (default "local").
        devSite: 'local',
        devFavorite: i % 9 === 0 ? 1 : 0,
        devIsNew: i % 17 === 3 ? 1 : 0,
        devIsArchived: archived ? 1 : 0,
        devAlertDown: alertDown,
        devPresentLastScan: present ? 1 : 0,
        devFirstConnection: dbTime(new Date(firstSeen)),
        devLastConnection: dbTime(new Date(lastSeen)),
      });
      // Sessions over the history: on for a few hours, off for a few.
      let t = now - historyDays * 24 * hour + Math.floor(random() * 12 * hour);
      seeder.event(mac, ip, dbTime(new Date(Math.max(firstSeen, t - hour))), 'New Device');
      while (t < now) {
        const on = Math.floor((1 + random() * 10) * hour);
        const end = t + on;
        if (end >= now) {
          if (present) {
            seeder.session(mac, ip, dbTime(new Date(t)), null);
            seeder.event(mac, ip, dbTime(new Date(t)), 'Connected');
          }
          break;
        }
        seeder.session(mac, ip, dbTime(new Date(t)), dbTime(new Date(end)));
        seeder.event(mac, ip, dbTime(new Date(t)), 'Connected');
        seeder.event(
          mac,
          ip,
          dbTime(new Date(end)),
          alertDown && random() < 0.15 ? 'Device Down' : 'Disconnected',
        );
        t = end + Math.floor((0.5 + random() * 14) * hour);
      }
      if (i % 13 === 5)
        seeder.event(mac, ip, dbTime(new Date(now - Math.floor(random() * 48 * hour))), 'IP Changed');
    }
  });
}

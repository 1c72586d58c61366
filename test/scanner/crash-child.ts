/**
 * Child process of the crash-consistency test: applies one big cycle to the database named in
 * argv[2]. With argv[3] = 'hang' it writes READY to stdout from inside the transaction (every row
 * written, COMMIT not yet run) and then blocks, so the parent can kill -9 it at exactly that point.
 */
import { writeSync } from 'node:fs';
import { openDatabase } from '../../src/db/connection.js';
import type { Observation } from '../../src/scanner/discovery.js';
import { planCycle } from '../../src/scanner/state-machine.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { ScanStore } from '../helpers/scan-store.js';

const [file, mode] = process.argv.slice(2);
if (file === undefined) throw new Error('usage: crash-child <db> [hang]');
const db = openDatabase(file);
const store = new ScanStore(new SqliteDevices(db));
const observations = new Map<string, Observation>();
for (let i = 0; i < 20_000; i++) {
  const mac = `02:00:00:00:${((i >> 8) & 0xff).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}`;
  observations.set(mac, { ips: [`10.9.${i >> 8}.${i & 0xff}`], vendor: '', source: 'arp-scan' });
}
const plan = planCycle({ known: store.loadState(), observations, missesBeforeAbsent: 1, now: new Date() });
store.apply(plan, {
  testOnlyBeforeCommit: () => {
    if (mode !== 'hang') return;
    writeSync(1, 'READY\n');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60_000);
  },
});
db.close();
writeSync(1, 'DONE\n');

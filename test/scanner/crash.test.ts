import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { ScanStore } from '../helpers/scan-store.js';
import { dumpTables, fixture, tempDb } from './helpers.js';
import { mergeSightings, parseArpScan } from '../../src/scanner/discovery.js';
import { planCycle } from '../../src/scanner/state-machine.js';

const child = fileURLToPath(new URL('./crash-child.js', import.meta.url));

/** Runs the child; with 'hang', kills it with SIGKILL once it is inside the transaction. */
async function runChild(file: string, mode: 'hang' | 'commit'): Promise<string> {
  const proc = spawn(process.execPath, [child, file, mode], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  proc.stdout.setEncoding('utf8');
  proc.stdout.on('data', (chunk: string) => {
    output += chunk;
    if (mode === 'hang' && output.includes('READY')) proc.kill('SIGKILL');
  });
  const [code, signal] = (await once(proc, 'exit')) as [number | null, string | null];
  return `${output.trim()} ${code ?? signal ?? ''}`;
}

describe('crash consistency', () => {
  test('kill -9 inside the cycle transaction leaves none of it; a finished one leaves all of it', async () => {
    const handle = tempDb();
    try {
      // Some history first, so "none of it" means "exactly what was there".
      const store = new ScanStore(new SqliteDevices(handle.db));
      const observations = mergeSightings([
        { tool: 'arp-scan', sightings: parseArpScan(fixture('arp-scan.txt')) },
      ]);
      store.apply(
        planCycle({ known: store.loadState(), observations, missesBeforeAbsent: 1, now: new Date() }),
      );
      const before = dumpTables(handle.db);
      handle.db.close();

      assert.equal(await runChild(handle.file, 'hang'), 'READY SIGKILL');
      handle.reopen();
      assert.equal(handle.db.pragma('integrity_check', { simple: true }), 'ok');
      assert.deepEqual(dumpTables(handle.db), before, 'no half-applied cycle');
      handle.db.close();

      assert.equal(await runChild(handle.file, 'commit'), 'DONE 0');
      handle.reopen();
      const count = (table: string): unknown =>
        handle.db.prepare(`SELECT count(*) FROM ${table}`).pluck().get();
      assert.equal(count('Devices'), 20_004);
      assert.equal(count('Events'), 20_000 + 4 + 4, 'new devices, plus the four first ones now Disconnected');
      assert.equal(count('Sessions'), 20_004);
      assert.equal(count('ScanState'), 20_004);
    } finally {
      handle.remove();
    }
  });
});

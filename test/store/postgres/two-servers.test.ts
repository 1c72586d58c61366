/**
 * Two real netkeep servers on one PostgreSQL database (DESIGN 15): an API write on one is carried by
 * the other's /stream; one server runs the scan loop of the site and the other stands by (its
 * cycles are not run), and the one standing by takes over when the scanning server dies. The
 * caches' side (a write on one server in the other's change readers) is
 * test/store/postgres/change-tracking.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fakeArpScanEnv, fakeArpScanMac, writeFakeArpScan } from '../../helpers/fake-arp-scan.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../../helpers/postgres.js';
import { eventually } from '../../helpers/processes.js';
import { requireAll, skipUnlessCi } from '../../helpers/requirements.js';
import { TestServer } from '../../helpers/server.js';
import { openSse } from '../../helpers/sse.js';

const skip = skipUnlessCi(postgresMissing(), 'PostgreSQL two-server tests');

const logged = (server: TestServer, event: string): number =>
  server.logs.filter((line) => line.includes(`"event":"${event}"`)).length;

describe('two servers on one PostgreSQL database', { skip }, () => {
  let pg: PostgresServer;
  let tools: string;
  let a: TestServer;
  let b: TestServer;

  before(async () => {
    requireAll(postgresMissing());
    pg = await startPostgres();
    tools = mkdtempSync(join(tmpdir(), 'netkeep-two-servers-'));
    writeFakeArpScan(tools, 3);
    const env = { DATABASE_URL: pg.url, ...fakeArpScanEnv(tools), SCAN_INTERVAL: '5' };
    a = await TestServer.start({ env });
    assert.ok(await eventually(() => logged(a, 'scan-cycle') === 1, 400), 'the first server scans');
    b = await TestServer.start({ env });
  });
  after(async () => {
    await a.stop();
    await b.stop();
    await pg.stop();
    rmSync(tools, { recursive: true, force: true });
  });

  test("a write on one server is on the other's /stream, and so are its scan cycles", async () => {
    assert.ok(await eventually(() => logged(b, 'scan-standby') === 1, 400), 'the second stands by');
    const stream = await openSse(b, 'GET', '/stream');
    assert.equal(stream.status, 200);
    const mac = 'aa:bb:cc:00:00:01';
    assert.equal((await a.request('POST', `/device/${mac}`, { body: { createNew: true } })).status, 200);
    const created = await stream.waitFor((m) => m.event === 'device' && m.json.mac === mac);
    assert.equal(created.json.change, 'created');
    // The next cycle of the scanning server (SCAN_INTERVAL 5 s): its events, then its summary.
    const first = await stream.waitFor((m) => m.event === 'device-event', 400);
    const from = stream.messages.indexOf(first);
    const summary = await stream.waitFor((m) => m.event === 'scan' && stream.messages.indexOf(m) > from, 400);
    stream.close();
    const events = stream.messages
      .slice(from, stream.messages.indexOf(summary))
      .filter((m) => m.event === 'device-event');
    assert.equal(events.length, 6, 'three hosts connect (new), three disconnect');
    assert.ok(events.some((m) => m.json.mac === fakeArpScanMac(3) || m.json.mac === fakeArpScanMac(0)));
    await b.logsCaughtUp();
    assert.equal(logged(b, 'scan-cycle'), 0, 'the server standing by ran no cycle');
    const manual = await b.request('POST', '/nettools/scan');
    assert.equal(manual.status, 409, manual.text);
    assert.equal(manual.json.code, 'SCAN_STANDBY');
  });

  test('the server standing by takes over the scan loop when the scanning one dies', async () => {
    await a.kill();
    assert.ok(await eventually(() => logged(b, 'scan-leader') === 1, 400), 'it takes the lock');
    assert.ok(await eventually(() => logged(b, 'scan-cycle') >= 1, 400), 'and scans');
  });
});

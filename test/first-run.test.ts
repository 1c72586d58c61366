/**
 * What a new user meets first: start-up names the OS tools that are missing (one warning line with
 * the Debian packages), and a wrong type on a flag field is one sentence saying what the field
 * accepts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { storedFields } from '../src/devices/catalogue.js';
import { TestServer } from './helpers/server.js';

describe('first run', () => {
  let server: TestServer;
  const emptyToolPath = mkdtempSync(join(tmpdir(), 'netkeep-no-tools-'));

  before(async () => {
    server = await TestServer.start({ env: { TOOL_PATH: emptyToolPath } });
    const created = await server.request('POST', '/device/aa:00:00:00:00:01', { body: { createNew: true } });
    assert.equal(created.status, 200);
  });
  after(async () => {
    await server.stop();
    rmSync(emptyToolPath, { recursive: true, force: true });
  });

  test('start-up names the missing OS tools in one warning line', async () => {
    await server.logsCaughtUp();
    const lines = server.logs.filter((line) => line.includes('"event":"tools-missing"'));
    assert.equal(lines.length, 1, server.logs.join('\n'));
    const line = JSON.parse(lines[0] ?? '{}') as { level: number; packages: string[]; msg: string };
    assert.equal(line.level, 40, 'a warning');
    // ping and ip: presence scanning's IPv6 neighbours and the security watch's routes.
    const packages = [
      'nmap',
      'traceroute',
      'dnsutils',
      'speedtest-cli',
      'arp-scan',
      'iputils-ping',
      'iproute2',
    ];
    assert.deepEqual(line.packages, packages);
    assert.match(line.msg, new RegExp(`apt-get install ${packages.join(' ')}`));
  });

  test('a wrong type on any flag field says "<field> must be 0, 1, true or false"', async () => {
    const flags = storedFields.filter((f) => f.kind === 'flag' && f.editable).map((f) => f.name);
    assert.ok(flags.includes('devFavorite'));
    for (const flag of flags) {
      for (const value of ['yes', 2, null, [1]]) {
        const res = await server.request('POST', '/device/aa:00:00:00:00:01', { body: { [flag]: value } });
        assert.equal(res.status, 400, `${flag}=${JSON.stringify(value)}`);
        assert.equal(res.json.message, `Invalid body: ${flag} must be 0, 1, true or false`);
      }
    }
    const port = await server.request('POST', '/device/aa:00:00:00:00:01', { body: { devParentPort: 'x' } });
    assert.equal(port.json.message, 'Invalid body: devParentPort must be an integer or null');
  });
});

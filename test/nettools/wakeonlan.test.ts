/**
 * Wake-on-LAN over a test LAN: the server (root namespace) broadcasts to the LAN's broadcast
 * address; a UDP recorder in a host namespace prints every datagram it receives.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestLan, testLanSkipReason, type LanProcess, type TestLan } from '../helpers/testlan.js';
import { TestServer } from '../helpers/server.js';

const skip = testLanSkipReason('wakeonlan tests');

function expectedHex(mac: string): string {
  const bytes = mac.replace(/[^0-9a-f]/gi, '').toLowerCase();
  return 'ff'.repeat(6) + bytes.repeat(16);
}

describe('POST /nettools/wakeonlan', { skip }, () => {
  let lan: TestLan;
  let server: TestServer;
  let recorder: LanProcess;
  let otherRecorder: LanProcess;
  const port = 40009;
  const otherPort = 40010;

  // What `before` started, stopped in reverse by `after`: even when `before` fails half-way, or the
  // test LAN's processes would keep this file's process alive.
  const started: (() => Promise<unknown>)[] = [];

  before(async () => {
    lan = await createTestLan({ hosts: 1, far: false });
    started.push(() => lan.destroy());
    const host = lan.hosts.get('h1');
    assert.ok(host);
    recorder = await lan.udpRecorder(host, port);
    otherRecorder = await lan.udpRecorder(host, otherPort);
    server = await TestServer.start({ env: { WOL_BROADCAST: lan.broadcast, WOL_PORT: String(port) } });
    started.push(() => server.stop());
  });
  after(async () => {
    for (const stop of started.reverse()) await stop();
  });

  /** Waits for `count` more datagrams than `from` and returns them. */
  async function packets(proc: LanProcess, from: number, count: number): Promise<string[]> {
    await proc.waitForLine(/./); // at least one line exists
    for (let i = 0; i < 200 && proc.lines.length < from + count; i++)
      await new Promise((r) => setTimeout(r, 25));
    return proc.lines.slice(from);
  }

  test('every accepted MAC form sends the 102-byte packet 3 times to the LAN broadcast', async () => {
    const forms: [string, string][] = [
      ['02:1a:2b:3c:4d:5e', '02:1a:2b:3c:4d:5e'],
      ['02-1A-2B-3C-4D-5F', '02:1a:2b:3c:4d:5f'],
      ['021a.2b3c.4d60', '02:1a:2b:3c:4d:60'],
      ['021A2B3C4D61', '02:1a:2b:3c:4d:61'],
    ];
    for (const [input, canonical] of forms) {
      const seen = recorder.lines.length - 1; // minus the 'listening' line
      const res = await server.request('POST', '/nettools/wakeonlan', { body: { devMac: input } });
      assert.equal(res.status, 200, input);
      assert.deepEqual(res.body, {
        success: true,
        message: 'WOL packet sent',
        output: `Sent magic packet to ${lan.broadcast}:${port} with ${canonical}`,
      });
      const got = await packets(recorder, seen + 1, 3);
      assert.equal(got.length, 3, `3 packets for ${input}`);
      for (const line of got) {
        const [from, hex = ''] = line.split(' ');
        assert.equal(from, lan.rootAddress);
        assert.equal(hex.length / 2, 102);
        assert.equal(hex, expectedHex(canonical));
      }
    }
  });

  test('broadcast and port in the body override the defaults', async () => {
    const res = await server.request('POST', '/nettools/wakeonlan', {
      body: { devMac: '02:00:00:00:00:99', broadcast: lan.broadcast, port: otherPort },
    });
    assert.equal(res.status, 200);
    assert.equal(
      res.json.output,
      `Sent magic packet to ${lan.broadcast}:${otherPort} with 02:00:00:00:00:99`,
    );
    const got = await packets(otherRecorder, 1, 3);
    assert.equal(got.length, 3);
    assert.ok(got.every((line) => line.endsWith(expectedHex('02:00:00:00:00:99'))));
  });

  test('bad MACs, broadcasts and ports are 400 naming the field, and nothing is sent', async () => {
    const before = recorder.lines.length;
    const bad: [unknown, string][] = [
      [{ devMac: 'zz:bb:cc:dd:ee:ff' }, 'devMac'],
      [{ devMac: 'aa:bb:cc:dd:ee' }, 'devMac'],
      [{ devMac: 'aa:bb-cc:dd:ee:ff' }, 'devMac'],
      [{ devMac: 'aa:bb:cc:dd:ee:ff:00' }, 'devMac'],
      [{ devMac: '' }, 'devMac'],
      [{ devMac: '-aabbccddeeff' }, 'devMac'],
      [{ devMac: 'ａａbbccddeeff' }, 'devMac'],
      [{ devMac: 123456789012 }, 'devMac'],
      [{ devMac: ['aa:bb:cc:dd:ee:ff'] }, 'devMac'],
      [{}, 'devMac'],
      [{ devMac: 'aa:bb:cc:dd:ee:ff', broadcast: '::1' }, 'broadcast'],
      [{ devMac: 'aa:bb:cc:dd:ee:ff', broadcast: '10.0.0.256' }, 'broadcast'],
      [{ devMac: 'aa:bb:cc:dd:ee:ff', port: 0 }, 'port'],
      [{ devMac: 'aa:bb:cc:dd:ee:ff', port: 65536 }, 'port'],
      [{ devMac: 'aa:bb:cc:dd:ee:ff', port: '9' }, 'port'],
      [{ devMac: 'aa:bb:cc:dd:ee:ff', extra: 1 }, 'extra'],
    ];
    for (const [body, field] of bad) {
      const res = await server.request('POST', '/nettools/wakeonlan', { body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(String(res.json.message), new RegExp(field), JSON.stringify(body));
    }
    // A good request afterwards: its 3 packets are the only new ones, so the bad ones sent nothing.
    const res = await server.request('POST', '/nettools/wakeonlan', {
      body: { devMac: '02:00:00:00:00:aa' },
    });
    assert.equal(res.status, 200);
    const got = await packets(recorder, before, 3);
    assert.equal(got.length, 3);
    assert.ok(got.every((line) => line.endsWith(expectedHex('02:00:00:00:00:aa'))));
  });

  test('needs the token', async () => {
    const res = await server.request('POST', '/nettools/wakeonlan', {
      body: { devMac: '02:00:00:00:00:ab' },
      token: null,
    });
    assert.equal(res.status, 403);
  });
});

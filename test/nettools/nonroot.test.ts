/**
 * Running without root: the real server runs as `nobody` on a test LAN, with CAP_NET_RAW and
 * CAP_NET_ADMIN given the two ways docs/install.md describes:
 *   - ambient capabilities (what the systemd unit's AmbientCapabilities= does), here with
 *     `setpriv --ambient-caps`: presence scanning with arp-scan and nmap `detail` (-A) both work;
 *   - file capabilities on the tool binaries (what the Dockerfile's setcap does), here on copies of
 *     nmap and arp-scan in a directory on TOOL_PATH: the same two work;
 * and without either, `detail` is a 503 that says what to do. Building the LAN and switching user
 * need root: under CI a run without root fails naming that, it is never skipped.
 */
import assert from 'node:assert/strict';
import { copyFileSync, chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { asNobody } from '../helpers/processes.js';
import { createTestLan, testLanSkipReason, type LanHost, type TestLan } from '../helpers/testlan.js';
import { TestServer } from '../helpers/server.js';
import { waitForFirstCycle } from '../scanner/helpers.js';

const why = testLanSkipReason();
const ci = process.env.CI === 'true';
if (why && !ci) console.log(`# non-root tests skipped: ${why}`);

type Json = Record<string, unknown>;

const withAmbientCaps = [...asNobody, '--inh-caps=+net_raw,+net_admin', '--ambient-caps=+net_raw,+net_admin'];
const caps = (pid: number | undefined, set: string): string =>
  new RegExp(`^${set}:\\s*(\\S+)$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '';

const httpServer = `
  require('node:http').createServer((req, res) => {
    res.setHeader('Server', 'nginx/1.22.1');
    res.end('<html><title>netkeep test</title></html>');
  }).listen(80, '0.0.0.0', () => console.log('listening'));`;

/** A data directory `nobody` can write. */
function dataDirForNobody(): string {
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-nonroot-'));
  chmodSync(dir, 0o777);
  return dir;
}

describe('without root, with capabilities', { skip: !ci && why !== undefined }, () => {
  let lan: TestLan;
  let h1: LanHost;
  const servers: TestServer[] = [];
  const dirs: string[] = [];

  before(async () => {
    if (why) throw new Error(`the non-root tests cannot run: ${why}`);
    lan = await createTestLan({ hosts: 2, far: false });
    const first = lan.hosts.get('h1');
    assert.ok(first);
    h1 = first;
    await lan.node(h1.ns, httpServer).waitForLine(/^listening$/);
  });
  after(async () => {
    for (const server of servers) await server.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    await lan.destroy();
  });

  async function start(wrapper: readonly string[], env: Record<string, string> = {}): Promise<TestServer> {
    const dataDir = dataDirForNobody();
    dirs.push(dataDir);
    const server = await TestServer.start({
      wrapper,
      dataDir,
      env: {
        SCAN_SUBNETS: `${lan.subnet}@${lan.lanInterface}`,
        SCAN_TOOL: 'arp-scan',
        SCAN_INTERVAL: '86400',
        ...env,
      },
    });
    servers.push(server);
    const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${server.process.pid}/status`, 'utf8'))?.[1];
    assert.equal(uid, '65534', 'the server runs as nobody');
    return server;
  }

  async function scanFindsTheLan(server: TestServer): Promise<void> {
    // The cycle the server starts on its own, then one asked for.
    await waitForFirstCycle(server);
    const res = await server.request('POST', '/nettools/scan');
    assert.equal(res.status, 200, res.text);
    const cycle = (res.json.lastCycle ?? {}) as Json;
    assert.deepEqual(cycle.errors, []);
    const found = ((await server.request('GET', '/devices')).json.devices as Json[]).map((d) => d.devMac);
    for (const host of lan.hosts.values())
      assert.ok(found.includes(host.mac), `${host.name} found by arp-scan`);
  }

  async function detailWorks(server: TestServer): Promise<void> {
    const res = await server.request('POST', '/nettools/nmap', { body: { scan: h1.ip, mode: 'detail' } });
    assert.equal(res.status, 200, res.text);
    const [host] = res.json.hosts as {
      mac: string | null;
      ports: { port: number; product: string | null }[];
    }[];
    assert.equal(host?.mac, h1.mac, 'raw-socket ARP discovery saw the MAC');
    assert.equal(host.ports.find((p) => p.port === 80)?.product, 'nginx');
  }

  test('ambient capabilities (systemd AmbientCapabilities=): arp-scan scanning and nmap detail', async () => {
    const server = await start(withAmbientCaps);
    assert.equal(caps(server.process.pid, 'CapAmb'), '0000000000003000', 'NET_ADMIN and NET_RAW only');
    await scanFindsTheLan(server);
    await detailWorks(server);
  });

  test('file capabilities on the binaries (the Docker image): arp-scan scanning and nmap detail', async () => {
    const bin = mkdtempSync(join(tmpdir(), 'netkeep-caps-bin-'));
    dirs.push(bin);
    chmodSync(bin, 0o755);
    for (const tool of ['nmap', 'arp-scan']) {
      const found = spawnSync('sh', ['-c', 'command -v "$1"', 'sh', tool], {
        encoding: 'utf8',
      }).stdout.trim();
      assert.ok(found, `${tool} is installed`);
      copyFileSync(found, join(bin, tool));
      chmodSync(join(bin, tool), 0o755);
      const setcap = spawnSync('setcap', ['cap_net_raw,cap_net_admin+eip', join(bin, tool)], {
        encoding: 'utf8',
      });
      assert.equal(setcap.status, 0, `setcap (libcap2-bin): ${setcap.stderr}`);
    }
    // arp-scan reads its vendor files from its data directory, wherever the binary is.
    const server = await start(asNobody, { TOOL_PATH: `${bin}:/usr/sbin:/usr/bin:/sbin:/bin` });
    assert.equal(caps(server.process.pid, 'CapEff'), '0000000000000000', 'the server itself has none');
    await scanFindsTheLan(server);
    await detailWorks(server);
  });

  test('neither: nmap detail is a 503 that says how to give the capabilities', async () => {
    const server = await start(asNobody, { SCAN_SUBNETS: '' });
    const res = await server.request('POST', '/nettools/nmap', { body: { scan: h1.ip, mode: 'detail' } });
    assert.equal(res.status, 503);
    assert.match(String(res.json.message), /CAP_NET_RAW and CAP_NET_ADMIN/);
  });
});

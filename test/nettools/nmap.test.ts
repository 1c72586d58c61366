/**
 * nmap against a test LAN: h1 runs an HTTP server on port 80 that names itself (nginx), h2 has no
 * open port. Reverse lookups go to a DNS stand-in on port 53 of a random loopback address (nmap
 * always asks port 53), so nothing reaches the system resolver and no lookup waits for a timeout.
 */
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { randomLoopbackAddress, startDnsStandIn, type DnsStandIn } from '../helpers/dns.js';
import { createTestLan, testLanSkipReason, type LanHost, type TestLan } from '../helpers/testlan.js';
import { TestServer } from '../helpers/server.js';
import { nextToolRun, toolRunCount } from '../helpers/toolruns.js';
import { DomainError } from '../../src/errors.js';
import { parseIpPort } from '../../src/validation.js';
import { nmapArgs } from '../../src/nettools/nmap.js';
import { parseNmapXml } from '../../src/nettools/nmap-xml.js';

const skip = testLanSkipReason('nmap tests');

interface Host {
  address: string;
  mac: string | null;
  state: string;
  hostnames: string[];
  ports: {
    port: number;
    protocol: string;
    state: string;
    service: string | null;
    product: string | null;
    version: string | null;
  }[];
}

const httpServer = `
  require('node:http').createServer((req, res) => {
    res.setHeader('Server', 'nginx/1.22.1');
    res.setHeader('Content-Type', 'text/html');
    res.end('<html><title>netkeep test</title></html>');
  }).listen(80, '0.0.0.0', () => console.log('listening'));`;

describe('POST /nettools/nmap', { skip }, () => {
  let lan: TestLan;
  let dns: DnsStandIn;
  let server: TestServer;
  let h1: LanHost;
  let h2: LanHost;

  before(async () => {
    lan = await createTestLan({ hosts: 2, far: false });
    const first = lan.hosts.get('h1');
    const second = lan.hosts.get('h2');
    assert.ok(first && second);
    h1 = first;
    h2 = second;
    await lan.node(h1.ns, httpServer).waitForLine(/^listening$/);
    dns = await startDnsStandIn({ 'web.lan.test': h1.ip }, { host: randomLoopbackAddress(), port: 53 });
    server = await TestServer.start({ env: { DNS_SERVER: dns.host } });
  });
  after(async () => {
    await server.stop();
    await dns.close();
    await lan.destroy();
  });

  for (const mode of ['fast', 'normal', 'skipdiscovery'] as const) {
    test(`mode ${mode}: the open port in output and hosts`, async () => {
      const seen = await toolRunCount(server);
      const res = await server.request('POST', '/nettools/nmap', { body: { scan: h1.ip, mode } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.success, true);
      assert.equal(res.json.mode, mode);
      assert.equal(res.json.ip, h1.ip);
      const output = res.json.output as string[];
      assert.ok(output.every((line) => line.trim() !== ''));
      assert.ok(
        output.some((line) => /^80\/tcp\s+open\s+http/.test(line)),
        output.join('\n'),
      );
      const hosts = res.json.hosts as Host[];
      assert.equal(hosts.length, 1);
      const host = hosts[0];
      assert.ok(host);
      assert.equal(host.address, h1.ip);
      assert.equal(host.state, 'up');
      assert.equal(host.mac, h1.mac);
      assert.deepEqual(host.hostnames, ['web.lan.test']);
      assert.deepEqual(
        host.ports.map((p) => [p.port, p.protocol, p.state, p.service]),
        [[80, 'tcp', 'open', 'http']],
      );
      const args = (await nextToolRun(server, seen)) as { args: string[] };
      const expected = { fast: ['-F'], normal: [], skipdiscovery: ['-Pn'] }[mode];
      assert.deepEqual(args.args.slice(0, expected.length), expected);
      assert.equal(args.args.at(-1), h1.ip);
    });
  }

  test('mode detail (-A): service product and version identified', async () => {
    const res = await server.request('POST', '/nettools/nmap', { body: { scan: h1.ip, mode: 'detail' } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.mode, 'detail');
    const [host] = res.json.hosts as Host[];
    const http = host?.ports.find((p) => p.port === 80);
    assert.ok(http);
    assert.equal(http.product, 'nginx');
    assert.equal(http.version, '1.22.1');
    assert.ok((res.json.output as string[]).some((line) => line.includes('http-title: netkeep test')));
  });

  test('a CIDR range of the test LAN finds every host', async () => {
    const network = lan.subnet.replace(/\.0\/24$/, '.0/28');
    const res = await server.request('POST', '/nettools/nmap', { body: { scan: network, mode: 'fast' } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.ip, network);
    const hosts = res.json.hosts as Host[];
    const up = hosts
      .filter((h) => h.state === 'up')
      .map((h) => h.address)
      .sort();
    assert.deepEqual(up, [lan.gateway, lan.rootAddress, h1.ip, h2.ip].sort());
    assert.equal(hosts.find((h) => h.address === h2.ip)?.mac, h2.mac);
    assert.deepEqual(hosts.find((h) => h.address === h2.ip)?.ports, []);
  });

  test('IPv6 loopback gets -6', async () => {
    const seen = await toolRunCount(server);
    const res = await server.request('POST', '/nettools/nmap', { body: { scan: '::1', mode: 'fast' } });
    assert.equal(res.status, 200, res.text);
    assert.equal((res.json.hosts as Host[])[0]?.address, '::1');
    const run = await nextToolRun(server, seen);
    assert.deepEqual((run.args as string[]).slice(0, 2), ['-F', '-6']);
  });

  test('bad targets, ranges and modes are 400 and start no process', async () => {
    const marker = join(tmpdir(), `netkeep-nmap-injection-${process.pid}`);
    rmSync(marker, { force: true });
    const runs = await toolRunCount(server);
    const bad: [unknown, string][] = [
      [{ scan: '10.0.0.0/19', mode: 'fast' }, 'scan'],
      [{ scan: '::/64', mode: 'fast' }, 'scan'],
      [{ scan: h1.ip, mode: 'FAST' }, 'mode'],
      [{ scan: h1.ip, mode: '-A' }, 'mode'],
      [{ scan: h1.ip, mode: 'fast ' }, 'mode'],
      [{ scan: h1.ip, mode: '' }, 'mode'],
      [{ scan: h1.ip, mode: 'constructor' }, 'mode'],
      [{ scan: h1.ip, mode: '__proto__' }, 'mode'],
      [{ scan: `-oN ${marker} 127.0.0.1`, mode: 'fast' }, 'scan'],
      [{ scan: '--script=http-title', mode: 'fast' }, 'scan'],
      [{ scan: '127.0.0.1 -iL /etc/passwd', mode: 'fast' }, 'scan'],
      [{ scan: '127.0.0.1\n10.0.0.1', mode: 'fast' }, 'scan'],
      [{ scan: '１２７.0.0.1', mode: 'fast' }, 'scan'],
      [{ scan: '١٢٧.0.0.1', mode: 'fast' }, 'scan'],
      [{ scan: 'localhost', mode: 'fast' }, 'scan'],
      [{ scan: '10.0.0.1-20', mode: 'fast' }, 'scan'],
      [{ scan: '10.0.0.0/33', mode: 'fast' }, 'scan'],
      [{ scan: '010.0.0.1', mode: 'fast' }, 'scan'],
      [{ scan: '', mode: 'fast' }, 'scan'],
      [{ scan: 127001, mode: 'fast' }, 'scan'],
      [{ scan: h1.ip, mode: 1 }, 'mode'],
      [{ scan: h1.ip }, 'mode'],
      [{ mode: 'fast' }, 'scan'],
    ];
    for (const [body, field] of bad) {
      const res = await server.request('POST', '/nettools/nmap', { body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(String(res.json.message), new RegExp(field), JSON.stringify(body));
    }
    assert.equal(await toolRunCount(server), runs, 'no nmap was started');
    assert.equal(existsSync(marker), false, 'no file was written');
  });
});

describe('nmap arguments (no process)', () => {
  const options = { maxHosts: 4096, timeoutMs: 1000, dnsServer: undefined, uid: 0 };
  const dns = (text: string) => parseIpPort(text) ?? undefined;

  test('detail mode without root is refused up front (unavailable: 503) explaining why', () => {
    assert.throws(
      () => nmapArgs('127.0.0.1', 'detail', { ...options, uid: 1000 }),
      (err: unknown) =>
        err instanceof DomainError &&
        err.kind === 'unavailable' &&
        err.code === 'NEEDS_ROOT' &&
        /needs root/.test(err.message),
    );
    assert.deepEqual(nmapArgs('127.0.0.1', 'fast', { ...options, uid: 1000 }).args, ['-F']);
  });

  test('mode flags, -6, and --dns-servers (or -n when DNS_SERVER is not on port 53, which nmap cannot use)', () => {
    assert.deepEqual(nmapArgs('::1', 'skipdiscovery', { ...options, dnsServer: dns('127.0.0.1') }), {
      mode: 'skipdiscovery',
      args: ['-Pn', '-6', '--dns-servers', '127.0.0.1'],
      target: '::1',
    });
    assert.deepEqual(nmapArgs('::1', 'fast', { ...options, dnsServer: dns('[::1]:53') }).args, [
      '-F',
      '-6',
      '--dns-servers',
      '::1',
    ]);
    assert.deepEqual(nmapArgs('10.0.0.1', 'fast', { ...options, dnsServer: dns('127.0.0.1:5353') }).args, [
      '-F',
      '-n',
    ]);
    assert.deepEqual(nmapArgs('10.0.0.0/20', 'normal', options).args, []);
  });

  test('XML parsing gives null for absent values', () => {
    const xml =
      '<nmaprun><host><status state="up"/><address addr="10.0.0.1" addrtype="ipv4"/>' +
      '<ports><port protocol="tcp" portid="22"><state state="open"/></port></ports></host></nmaprun>';
    assert.deepEqual(parseNmapXml(xml), {
      hosts: [
        {
          address: '10.0.0.1',
          addressType: 'ipv4',
          mac: null,
          vendor: null,
          hostnames: [],
          state: 'up',
          ports: [{ port: 22, protocol: 'tcp', state: 'open', service: null, product: null, version: null }],
        },
      ],
      skipped: [],
      error: null,
    });
    assert.throws(() => parseNmapXml('Starting Nmap 7.93'), /no <nmaprun>/);
  });
});

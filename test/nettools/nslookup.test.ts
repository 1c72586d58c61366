/** nslookup against a DNS stand-in on loopback (never the system resolver). */
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { after, before, describe, test } from 'node:test';
import { startDnsStandIn, type DnsStandIn } from '../helpers/dns.js';
import { TestServer } from '../helpers/server.js';
import { toolRunCount } from '../helpers/toolruns.js';
import { loadConfig } from '../../src/config.js';

/** A loopback UDP port with nothing listening: bind, note the port, close. */
async function unusedUdpPort(): Promise<number> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => {
    socket.close(() => {
      resolve();
    });
  });
  return port;
}

describe('POST /nettools/nslookup', () => {
  let dns: DnsStandIn;
  let server: TestServer;
  let unreachable: TestServer;

  before(async () => {
    dns = await startDnsStandIn({ 'printer.lan.test': '10.231.1.5', 'nas.lan.test': '10.231.1.6' });
    const deadPort = await unusedUdpPort();
    [server, unreachable] = await Promise.all([
      TestServer.start({ env: { DNS_SERVER: dns.address } }),
      TestServer.start({ env: { DNS_SERVER: `127.0.0.1:${deadPort}`, NSLOOKUP_TIMEOUT_MS: '4000' } }),
    ]);
  });
  after(async () => {
    await Promise.all([server.stop(), unreachable.stop()]);
    await dns.close();
  });

  test('forward lookup: the lines of nslookup, blank lines dropped', async () => {
    const res = await server.request('POST', '/nettools/nslookup', {
      body: { devLastIP: 'printer.lan.test' },
    });
    assert.equal(res.status, 200);
    const output = res.json.output as string[];
    assert.ok(output.every((line) => line.trim() !== ''));
    assert.ok(output.includes('Name:\tprinter.lan.test'), JSON.stringify(output));
    assert.ok(output.includes('Address: 10.231.1.5'), JSON.stringify(output));
    assert.ok(output.some((line) => line.startsWith('Server:') && line.includes('127.0.0.1')));
    assert.ok(dns.queries.includes('printer.lan.test/1'), 'the stand-in was asked');
  });

  test('reverse lookup of an IP address', async () => {
    const res = await server.request('POST', '/nettools/nslookup', { body: { devLastIP: '10.231.1.6' } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.output, ['6.1.231.10.in-addr.arpa\tname = nas.lan.test.']);
  });

  test('NXDOMAIN is a result: 200 with the lines that say so', async () => {
    for (const devLastIP of ['missing.lan.test', '10.231.9.9']) {
      const res = await server.request('POST', '/nettools/nslookup', { body: { devLastIP } });
      assert.equal(res.status, 200, devLastIP);
      assert.ok((res.json.output as string[]).some((line) => /server can't find .*NXDOMAIN/.test(line)));
    }
  });

  test('a resolver that cannot be reached is 500 with details', async () => {
    const res = await unreachable.request('POST', '/nettools/nslookup', {
      body: { devLastIP: 'printer.lan.test' },
    });
    assert.equal(res.status, 500);
    assert.equal(res.json.error, 'Command failed');
    assert.match(String(res.json.details), /no servers could be reached/);
  });

  test('bad names are 400 and start no process', async () => {
    const runs = await toolRunCount(server);
    for (const devLastIP of [
      '-query=any',
      '-',
      'a..b',
      'bad_name.test',
      'x'.repeat(64) + '.test',
      `${'a.'.repeat(127)}ab`,
      'host name',
      'host;id',
      'printer.lan.test\n-debug',
      '１２７.0.0.1',
      '',
    ]) {
      const res = await server.request('POST', '/nettools/nslookup', { body: { devLastIP } });
      assert.equal(res.status, 400, JSON.stringify(devLastIP));
      assert.match(String(res.json.message), /devLastIP/);
    }
    for (const body of [{}, { devLastIP: 5 }, { devLastIP: { a: 1 } }]) {
      const res = await server.request('POST', '/nettools/nslookup', { body });
      assert.equal(res.status, 400);
      assert.match(String(res.json.message), /devLastIP/);
    }
    assert.equal(await toolRunCount(server), runs);
  });
});

describe('misconfigured tool settings', () => {
  test('a DNS_SERVER, WOL_BROADCAST or URL that is malformed stops the server at start (exit 2, named)', async () => {
    for (const [name, value] of [
      ['DNS_SERVER', 'resolver.example:53'],
      ['DNS_SERVER', '127.0.0.1:0'],
      ['WOL_BROADCAST', '255.255.255.256'],
      ['SPEEDTEST_SERVER_URL', 'ftp://127.0.0.1/'],
      ['INTERNETINFO_URL', 'not a url'],
    ] as const) {
      await assert.rejects(TestServer.start({ env: { [name]: value } }), (err: Error) => {
        assert.match(err.message, /exited with 2/);
        assert.match(err.message, new RegExp(`configuration error: ${name} must be`));
        return true;
      });
    }
  });

  test('DNS_SERVER is parsed once, at start, into host and port (undefined when empty)', () => {
    const load = (value: string) => loadConfig({ DNS_SERVER: value }, '/nonexistent').DNS_SERVER;
    assert.throws(() => load('resolver.example:53'), /DNS_SERVER must be an IP address/);
    assert.deepEqual(load('[::1]:5353'), { host: '::1', port: 5353 });
    assert.deepEqual(load('192.168.1.1'), { host: '192.168.1.1', port: undefined });
    assert.equal(load(''), undefined);
  });
});

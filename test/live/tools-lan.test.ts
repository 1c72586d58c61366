/**
 * Streamed tools against the test LAN with the real traceroute, nmap and arp-scan: progress
 * messages arrive before the command ends (each message is stamped when its chunk was read, so a
 * progress message read strictly before the result was not flushed with it at the end), and the
 * final `result` has the shape and content of the plain answer to the same request.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestLan, testLanSkipReason, type LanHost, type TestLan } from '../helpers/testlan.js';
import { TestServer } from '../helpers/server.js';
import { finalMessage, openSse } from '../helpers/sse.js';
import { waitForFirstCycle } from '../scanner/helpers.js';
import { isNmapStatsLine } from '../../src/nettools/nmap.js';

const skip = testLanSkipReason('streamed tools on the test LAN');

const httpServer = `
  require('node:http').createServer((req, res) => res.end('ok')).listen(80, '0.0.0.0', () => console.log('listening'));`;

describe('streamed tools on the test LAN', { skip }, () => {
  let lan: TestLan;
  let server: TestServer;
  let quick: TestServer;
  let h1: LanHost;

  before(async () => {
    lan = await createTestLan({ hosts: 2, far: true });
    const first = lan.hosts.get('h1');
    assert.ok(first);
    h1 = first;
    await lan.node(h1.ns, httpServer).waitForLine(/^listening$/);
    [server, quick] = await Promise.all([
      TestServer.start({
        env: { SCAN_SUBNETS: `${lan.subnet}@${lan.lanInterface}`, SCAN_INTERVAL: '86400' },
      }),
      TestServer.start({ env: { TRACEROUTE_TIMEOUT_MS: '1000' } }),
    ]);
    await waitForFirstCycle(server);
  });
  after(async () => {
    await Promise.all([server.stop(), quick.stop()]);
    await lan.destroy();
  });

  test('traceroute: a line per hop as it comes, then the plain answer', async () => {
    const far = lan.far;
    assert.ok(far);
    const stream = await openSse(server, 'POST', '/nettools/traceroute', { body: { devLastIP: far.ip } });
    assert.equal(stream.status, 200);
    assert.equal(stream.headers.get('content-type'), 'text/event-stream');
    await stream.done;
    const { final, progress } = finalMessage(stream);
    assert.equal(final.event, 'result', final.data);
    const output = String(final.json.output);
    assert.deepEqual(
      progress.map((m) => m.json.line),
      output.split('\n'),
      'the progress lines are the output, line by line',
    );
    const plain = await server.request('POST', '/nettools/traceroute', { body: { devLastIP: far.ip } });
    assert.equal(plain.status, 200);
    assert.deepEqual(Object.keys(final.json).sort(), Object.keys(plain.json).sort());
    // The hop addresses (a probe lost to scheduling prints `*` first). The far host limits its
    // ICMP answers to one a second, so only the routers are compared with the second run.
    const hops = (text: string): string[] =>
      text
        .split('\n')
        .slice(1)
        .map((line) => /\d+\.\d+\.\d+\.\d+/.exec(line)?.[0] ?? '*');
    assert.deepEqual(hops(output).slice(0, 3), [lan.gateway, hops(output)[1], far.ip]);
    assert.deepEqual(
      hops(output).slice(0, 2),
      hops(String(plain.json.output)).slice(0, 2),
      'the same routers',
    );
  });

  test("traceroute to a far address that never answers: the routers' lines, then the 504", async () => {
    const far = lan.far;
    assert.ok(far);
    // Both routers answer at once; the third hop waits 3 s for an answer that never comes.
    const target = far.ip.replace(/\.10$/, '.99');
    const stream = await openSse(quick, 'POST', '/nettools/traceroute', { body: { devLastIP: target } });
    assert.equal(stream.status, 200);
    await stream.done;
    const { final, progress } = finalMessage(stream);
    assert.equal(final.event, 'error');
    assert.equal(final.json.status, 504);
    assert.equal(final.json.error, 'Tool timed out');
    assert.match(String(progress[0]?.json.line), /^traceroute to /);
    assert.match(String(progress[1]?.json.line), new RegExp(`^ 1  ${lan.gateway.replace(/\./g, '\\.')} `));
    assert.ok((progress[1]?.at ?? Infinity) < final.at, 'the first hop was read before the error');
  });

  test("nmap: lines and nmap's progress as the scan goes; the result's output as the plain answer's", async () => {
    // An unused address of the far subnet: nmap's ping probes go unanswered for seconds, long
    // enough for its own progress lines (--stats-every).
    const far = lan.far;
    assert.ok(far);
    const body = { scan: far.ip.replace(/\.10$/, '.99'), mode: 'fast' };
    const stream = await openSse(server, 'POST', '/nettools/nmap', { body });
    assert.equal(stream.status, 200);
    await stream.done;
    const { final, progress } = finalMessage(stream);
    assert.equal(final.event, 'result', final.data);
    const lines = progress.map((m) => String(m.json.line));
    assert.match(lines[0] ?? '', /^Starting Nmap/);
    assert.ok((progress[0]?.at ?? Infinity) < final.at, 'the first line was read before the result');
    const output = final.json.output as string[];
    assert.ok(lines.some(isNmapStatsLine), `nmap reported its progress: ${lines.join('\n')}`);
    assert.ok(!output.some(isNmapStatsLine), 'progress lines are not part of the output');
    assert.deepEqual(
      lines.filter((line) => line.trim() !== '' && !isNmapStatsLine(line)),
      output,
      'every output line was streamed',
    );

    const plain = await server.request('POST', '/nettools/nmap', { body });
    assert.equal(plain.status, 200);
    assert.deepEqual(Object.keys(final.json).sort(), Object.keys(plain.json).sort());
    assert.deepEqual(final.json.hosts, plain.json.hosts);
    // Timings differ from run to run ("scanned in 3.41 seconds", latencies); the lines do not.
    const shape = (out: unknown): string[] => (out as string[]).map((line) => line.replace(/[\d.:]+/g, '#'));
    assert.deepEqual(shape(output), shape(plain.json.output));
  });

  test('scan: one progress message per subnet, then the plain answer', async () => {
    const stream = await openSse(server, 'POST', '/nettools/scan');
    assert.equal(stream.status, 200);
    await stream.done;
    const { final, progress } = finalMessage(stream);
    assert.equal(final.event, 'result', final.data);
    assert.deepEqual(
      progress.map((m) => m.json),
      [{ subnet: `${lan.subnet}@${lan.lanInterface}`, devicesSeen: 3 }],
      'the router, h1 and h2',
    );
    assert.ok((progress[0]?.at ?? Infinity) <= final.at);
    const status = await server.request('GET', '/nettools/scan');
    assert.deepEqual(final.json, status.json, 'the result is the scan status the plain request answers');
    assert.deepEqual(Object.keys(final.json).sort(), ['enabled', 'lastCycle', 'running', 'success']);
  });
});

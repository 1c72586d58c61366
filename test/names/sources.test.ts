/**
 * The network name sources on loopback: each device is its own 127.0.0.x address, its mDNS and
 * NetBIOS responders bound there (on test ports), and the DNS stand-in answers PTR. Then the same
 * sources against responders that answer garbage, late, or flood answers, and a DNS server that
 * never answers: no name comes from them, and nothing throws.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { NameResolver } from '../../src/names/resolver.js';
import { nodeStatusRequest, parseNodeStatus, workstationName } from '../../src/names/netbios.js';
import { ptrAnswer, ptrQuestion, reverseName } from '../../src/names/dns-query.js';
import { hostPart } from '../../src/names/clean.js';
import { startDnsStandIn, type DnsStandIn } from '../helpers/dns.js';
import {
  freeUdpPort,
  mdnsAnswer,
  netbiosAnswer,
  startResponder,
  type Responder,
  type ResponderMode,
} from '../helpers/name-responders.js';

const dir = mkdtempSync(join(tmpdir(), 'netkeep-names-sources-'));
const config = (env: Record<string, string>): ReturnType<typeof loadConfig> =>
  loadConfig({ DATA_DIR: dir, NAME_TIMEOUT_MS: '400', ...env }, dir);

describe('name sources on loopback', () => {
  let mdnsPort: number;
  let netbiosPort: number;
  let dns: DnsStandIn;
  const responders: Responder[] = [];
  // Device n answers on 127.0.0.(10+n); its behaviour is the mode of its responders.
  const modes: ResponderMode[] = ['answer', 'garbage', 'late', 'flood', 'silent'];
  const ipOf = (n: number): string => `127.0.0.${10 + n}`;
  const macOf = (n: number): string => `02:00:00:00:00:${(10 + n).toString(16).padStart(2, '0')}`;

  before(async () => {
    mdnsPort = await freeUdpPort();
    netbiosPort = await freeUdpPort();
    for (const [n, mode] of modes.entries()) {
      responders.push(await startResponder(ipOf(n), mdnsPort, mode, mdnsAnswer({ [ipOf(n)]: `host-${n}` })));
      responders.push(await startResponder(ipOf(n), netbiosPort, mode, netbiosAnswer(`HOST-${n}`)));
    }
    dns = await startDnsStandIn({ 'host-0.home.lan': ipOf(0) });
  });
  after(async () => {
    for (const r of responders) await r.close();
    await dns.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const resolver = (env: Record<string, string> = {}): NameResolver =>
    new NameResolver({
      config: config({ DNS_SERVER: dns.address, ...env }),
      testOnlyPorts: { mdns: mdnsPort, netbios: netbiosPort },
    });

  test('a device answering every source: one candidate per source, best first; the FQDN from DNS', async () => {
    const round = await resolver().lookup([{ mac: macOf(0), ip: ipOf(0) }]);
    assert.deepEqual(round.results.get(macOf(0)), {
      candidates: [
        { source: 'mdns', name: 'host-0' },
        { source: 'netbios', name: 'HOST-0' },
        { source: 'dns', name: 'host-0' },
      ],
      fqdn: 'host-0.home.lan',
      lease: undefined,
    });
    assert.deepEqual(round.errors, []);
  });

  test('each source can be switched off', async () => {
    const round = await resolver({ NAME_MDNS: 'off', NAME_DNS: 'off' }).lookup([
      { mac: macOf(0), ip: ipOf(0) },
    ]);
    assert.deepEqual(round.results.get(macOf(0))?.candidates, [{ source: 'netbios', name: 'HOST-0' }]);
    assert.equal(round.results.get(macOf(0))?.fqdn, null);
  });

  for (const [n, mode] of modes.entries()) {
    if (mode === 'answer') continue;
    test(`responders that ${mode === 'silent' ? 'never answer' : `answer ${mode}`} give no name`, async () => {
      const before = responders.map((r) => r.questions());
      // Garbage and floods end the exchange as soon as they arrive; the longer limit only keeps a
      // loaded machine (the responders run in this process) from turning them into a timeout.
      const patient: Record<string, string> =
        mode === 'garbage' || mode === 'flood' ? { NAME_TIMEOUT_MS: '2500' } : {};
      const round = await resolver({ NAME_DNS: 'off', ...patient }).lookup([{ mac: macOf(n), ip: ipOf(n) }]);
      assert.deepEqual(round.results.get(macOf(n))?.candidates, []);
      // Both responders were asked: the absence of a name is their answer's doing.
      assert.equal(responders[2 * n]?.questions(), (before[2 * n] ?? 0) + 1);
      assert.equal(responders[2 * n + 1]?.questions(), (before[2 * n + 1] ?? 0) + 1);
      if (mode === 'garbage' || mode === 'flood')
        assert.deepEqual(
          round.errors.map((e) => e.source),
          ['mdns', 'netbios'],
          'garbage is reported',
        );
    });
  }

  test('a closed port (ICMP port unreachable) gives no name and no error', async () => {
    const round = await resolver({ NAME_DNS: 'off' }).lookup([{ mac: macOf(9), ip: '127.0.0.99' }]);
    assert.deepEqual(round.results.get(macOf(9))?.candidates, []);
    assert.deepEqual(round.errors, []);
  });

  test('a DNS server that never answers is reported, and given up on after NAME_CONCURRENCY silences in a row', async () => {
    const silent = await startResponder('127.0.0.1', 0, 'silent', () => undefined);
    try {
      const targets = Array.from({ length: 10 }, (_, i) => ({ mac: macOf(i + 20), ip: `127.0.1.${i + 1}` }));
      const round = await resolver({
        DNS_SERVER: `127.0.0.1:${silent.port}`,
        NAME_MDNS: 'off',
        NAME_NETBIOS: 'off',
        NAME_CONCURRENCY: '2',
      }).lookup(targets);
      assert.equal(round.results.size, 10);
      // Two silences in a row end it. A worker may have asked once more meanwhile: that question
      // ends with the round's give-up instead of waiting out its own timeout.
      assert.ok(silent.questions() <= 4, `${silent.questions()} questions`);
      const messages = round.errors.map((e) => e.message);
      assert.equal(messages.length, 2);
      assert.equal(messages[0], 'the DNS server did not answer in time (2 times)');
      assert.equal(
        messages[1],
        'the DNS server did not answer 2 questions in a row; reverse DNS skipped for the rest of the round',
      );
    } finally {
      await silent.close();
    }
  });
});

test('mDNS: the answer of a real Avahi to our unicast PTR question', () => {
  const hex = readFileSync(new URL('../../../test/fixtures/names/mdns-avahi.hex', import.meta.url), 'utf8');
  const answer = Buffer.from(hex.trim(), 'hex');
  assert.equal(ptrAnswer(answer, 0x4e4b, '10.231.252.2'), 'kitchen-pi.local');
  assert.equal(hostPart('kitchen-pi.local', true), 'kitchen-pi');
  // Another transaction id, or an answer about another address, is not an answer to this question.
  assert.equal(ptrAnswer(answer, 0x4e4c, '10.231.252.2'), undefined);
  assert.equal(ptrAnswer(answer, 0x4e4b, '10.231.252.3'), undefined);
  // Avahi's answer repeats our question (the reverse name, type PTR, class IN) byte for byte.
  assert.deepEqual(
    Buffer.from(ptrQuestion(0x4e4b, '10.231.252.2', false)).subarray(12),
    answer.subarray(12, 12 + 31),
  );
});

describe('NetBIOS node status', () => {
  test('the answer of a real nmbd: every name, and the workstation name', () => {
    const hex = readFileSync(
      new URL('../../../test/fixtures/names/nbstat-nmbd.hex', import.meta.url),
      'utf8',
    );
    const names = parseNodeStatus(Buffer.from(hex.trim(), 'hex'), 0x4e4b);
    assert.deepEqual(names, [
      { name: 'KITCHEN-PI', suffix: 0x00, group: false },
      { name: 'KITCHEN-PI', suffix: 0x03, group: false },
      { name: 'KITCHEN-PI', suffix: 0x20, group: false },
      { name: 'WORKGROUP', suffix: 0x00, group: true },
      { name: 'WORKGROUP', suffix: 0x1e, group: true },
    ]);
    assert.equal(workstationName(names), 'KITCHEN-PI');
    // The test responder answers in the same format (its group name first, to check the rule).
    const ours = netbiosAnswer('KITCHEN-PI')(nodeStatusRequest(0x4e4b), 0x4e4b);
    assert.ok(ours);
    assert.deepEqual(
      // Header (id, flags, counts), the answer's name, type and class are nmbd's byte for byte.
      Buffer.concat([ours.subarray(0, 12), ours.subarray(12, 50)]),
      Buffer.from(hex.trim(), 'hex').subarray(0, 50),
    );
    assert.equal(workstationName(parseNodeStatus(ours, 0x4e4b) ?? []), 'KITCHEN-PI');
  });
  test('the request is RFC 1002 node status for *', () => {
    const request = nodeStatusRequest(0x1234);
    assert.equal(request.length, 50);
    assert.equal(request.subarray(12, 46).toString('latin1'), ' CKAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\0');
    assert.equal(request.readUInt16BE(46), 0x21);
  });
  test('answers: group names skipped, control characters refused, wrong ids and short answers ignored', () => {
    const query = nodeStatusRequest(7);
    const answer = netbiosAnswer('KITCHEN-PI')(query, 7);
    assert.ok(answer);
    assert.equal(workstationName(parseNodeStatus(answer, 7) ?? []), 'KITCHEN-PI');
    assert.equal(parseNodeStatus(answer, 8), undefined);
    for (let cut = 0; cut < answer.length - 46; cut += 7)
      assert.equal(parseNodeStatus(answer.subarray(0, cut), 7), undefined, `cut at ${cut}`);
  });
  test('reverse names', () => {
    assert.equal(reverseName('10.1.2.3'), '3.2.1.10.in-addr.arpa');
    assert.equal(
      reverseName('fd00::1'),
      '1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa',
    );
  });
});

/**
 * The port watch's parsing and wording: captured real `nmap -F -oX -` output, hostile output (bad
 * ports, protocols, control characters, huge banners) and fuzzed output never throw anything but
 * an Error and never give anything but clean values.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import type { OpenPort } from '../../src/store/watch.js';
import { cleanText, maxToolText } from '../../src/watch/clean.js';
import { describePortChange, parsePortScan, portScanArgs } from '../../src/watch/ports.js';

const captured = readFileSync(new URL('../../../test/fixtures/watch/nmap-F.xml', import.meta.url), 'utf8');

function clean(port: OpenPort): void {
  assert.ok(Number.isInteger(port.port) && port.port >= 1 && port.port <= 65535);
  assert.ok(['tcp', 'udp'].includes(port.protocol));
  for (const text of [port.service, port.product, port.version]) {
    assert.doesNotMatch(text, /\p{C}/u);
    assert.ok(Array.from(text).length <= maxToolText);
  }
}

function withPorts(ports: string): string {
  return captured.replace(/<ports>[\s\S]*<\/ports>/, `<ports>${ports}</ports>`);
}

describe('port watch parsing', () => {
  test('arguments: nmap -F of a group of validated addresses, XML on stdout', () => {
    assert.deepEqual(portScanArgs(['10.0.0.5', '10.0.0.6']), [
      '-F',
      '-n',
      '-Pn',
      '--host-timeout',
      '120s',
      '-oX',
      '-',
      '10.0.0.5',
      '10.0.0.6',
    ]);
  });

  test('captured nmap -F output: the open port with its service', () => {
    assert.deepEqual(parsePortScan(captured, '127.0.0.1'), [
      { port: 8080, protocol: 'tcp', service: 'http-proxy', product: '', version: '' },
    ]);
    // A report without the host is no result (not "every port closed").
    assert.throws(() => parsePortScan(captured, '127.0.0.2'), /no result for 127.0.0.2/);
    assert.throws(() => parsePortScan('garbage', '127.0.0.1'), Error);
  });

  test('hostile ports, protocols and texts are skipped or cleaned', () => {
    const hostile = withPorts(
      [
        '<port protocol="tcp" portid="0"><state state="open"/></port>',
        '<port protocol="tcp" portid="70000"><state state="open"/></port>',
        '<port protocol="tcp" portid="22.5"><state state="open"/></port>',
        '<port protocol="tcp" portid="-1"><state state="open"/></port>',
        '<port protocol="sctp" portid="80"><state state="open"/></port>',
        '<port protocol="tcp" portid="81"><state state="filtered"/></port>',
        `<port protocol="tcp" portid="22"><state state="open"/><service name="ssh&#10;&#27;[31m" product="${'A'.repeat(5000)}" version="1&#8238;2"/></port>`,
        '<port protocol="tcp" portid="22"><state state="open"/><service name="dup"/></port>',
      ].join(''),
    );
    const ports = parsePortScan(hostile, '127.0.0.1');
    assert.deepEqual(
      ports.map((p) => [p.port, p.protocol, p.service, p.product.length, p.version]),
      [[22, 'tcp', 'dup', 0, '']],
    );
    // Raw control and bidi characters in the report (nmap copies banners), and a huge product.
    const first = parsePortScan(
      withPorts(
        `<port protocol="tcp" portid="22"><state state="open"/><service name="ssh\u001b[31m\u0007" product="${'A'.repeat(5000)}" version="1\u202e2\u0000"/></port>`,
      ),
      '127.0.0.1',
    );
    assert.deepEqual(first, [
      { port: 22, protocol: 'tcp', service: 'ssh[31m', product: 'A'.repeat(maxToolText), version: '12' },
    ]);
    for (const port of [...ports, ...first]) clean(port);
    assert.equal(cleanText(42), '');
  });

  test('fuzzed output: an Error or clean ports, never anything else', () => {
    for (let i = 0; i < 3000; i++) {
      let text: string;
      if (i % 3 === 0) text = randomBytes(randomInt(1, 400)).toString('latin1');
      else {
        // Damage the captured report: cut it, or splice random bytes into it.
        const at = randomInt(0, captured.length);
        text =
          i % 3 === 1
            ? captured.slice(0, at)
            : captured.slice(0, at) + randomBytes(randomInt(1, 40)).toString('latin1') + captured.slice(at);
      }
      try {
        for (const port of parsePortScan(text, '127.0.0.1')) clean(port);
      } catch (err) {
        assert.ok(err instanceof Error, String(err));
      }
    }
  });

  test('the event text: opened, then closed, each sorted', () => {
    const p = (port: number, protocol: 'tcp' | 'udp' = 'tcp'): OpenPort => ({
      port,
      protocol,
      service: '',
      product: '',
      version: '',
    });
    assert.equal(describePortChange([p(8080), p(22)], [p(80)]), 'opened 22/tcp, 8080/tcp; closed 80/tcp');
    assert.equal(describePortChange([], [p(53, 'udp'), p(80)]), 'closed 80/tcp, 53/udp');
    assert.equal(describePortChange([p(443)], []), 'opened 443/tcp');
    assert.equal(describePortChange([], []), '');
  });
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tokenChecker, tokenEquals } from '../src/http/auth.js';
import { toDbTime } from '../src/time.js';
import {
  ipOrMacPattern,
  ipVersion,
  isHostname,
  normalizeMac,
  parseIpOrMac,
  parseIpPort,
  parseScanTarget,
} from '../src/validation.js';

test('MAC forms', () => {
  for (const form of ['AA:BB:CC:00:11:22', 'aa-bb-cc-00-11-22', 'aabb.cc00.1122', 'AABBCC001122'])
    assert.equal(normalizeMac(form), 'aa:bb:cc:00:11:22', form);
  for (const bad of [
    'aa:bb:cc:00:11',
    'aa:bb-cc:00:11:22',
    'gg:bb:cc:00:11:22',
    ' aa:bb:cc:00:11:22',
    '-aabbcc001122',
    'ａａ:bb:cc:00:11:22',
  ])
    assert.equal(normalizeMac(bad), null, bad);
});

test('IP literals: no leading zeros, no zone ids, no Unicode digits', () => {
  assert.equal(ipVersion('10.0.0.1'), 4);
  assert.equal(ipVersion('::1'), 6);
  assert.equal(ipVersion('64:ff9b::10.0.0.1'), 6);
  for (const bad of [
    // IPv4-mapped IPv6, in both text forms: refused (the tools disagree on what it means).
    '::ffff:10.0.0.1',
    '::FFFF:127.0.0.1',
    '::ffff:7f00:1',
    '0:0:0:0:0:ffff:127.0.0.1',
    '010.0.0.1',
    '10.0.0',
    '1.2.3.4 ',
    'fe80::1%eth0',
    '::ffff:010.0.0.1',
    '١٢٧.0.0.1',
    '-1.2.3.4',
  ])
    assert.equal(ipVersion(bad), null, bad);
});

test('hostnames: RFC 1123 labels, and a dotted all-digit name is not a hostname', () => {
  for (const good of ['nas.lan', 'a-b.example.', 'x1']) assert.ok(isHostname(good), good);
  for (const bad of ['010.1.1.1', '1.2.3.4', '-a.lan', 'a_b.lan', 'a..lan', 'ñ.lan', 'a'.repeat(254)])
    assert.ok(!isHostname(bad), bad);
});

test('DNS server forms', () => {
  assert.deepEqual(parseIpPort('127.0.0.1'), { host: '127.0.0.1', port: undefined });
  assert.deepEqual(parseIpPort('127.0.0.1:5353'), { host: '127.0.0.1', port: 5353 });
  assert.deepEqual(parseIpPort('[::1]:53'), { host: '::1', port: 53 });
  for (const bad of [
    'resolver.example',
    '127.0.0.1:0',
    '127.0.0.1:65536',
    '127.0.0.1:053',
    '[::1]:',
    '::1:53x',
  ])
    assert.equal(parseIpPort(bad), null, bad);
});

test('scan targets and their size', () => {
  assert.deepEqual(parseScanTarget('10.0.0.0/24'), { target: '10.0.0.0/24', version: 4, size: 256 });
  assert.equal(parseScanTarget('10.0.0.0/33'), null);
  assert.equal(parseScanTarget('10.0.0.0/024'), null);
  assert.equal(parseScanTarget('10.0.0.1-20'), null);
});

test('times: impossible dates and years beyond 9999 are refused, offsets become UTC', () => {
  assert.equal(toDbTime('2024-05-01T12:00:00+02:00'), '2024-05-01 10:00:00');
  assert.equal(toDbTime('2024-02-29T00:00:00Z'), '2024-02-29 00:00:00');
  for (const bad of [
    '2024-02-31T10:00:00Z',
    '2023-02-29',
    '2024-13-01',
    '2024-05-01T10:60:00Z',
    '2024-05-01 10:00:60',
    '2024-01-01T24:00:00Z',
    '2024-01-01 24:00:00',
    '9999-12-31T23:59:59-14:00',
    'yesterday',
  ])
    assert.throws(() => toDbTime(bad), RangeError, bad);
});

test('the Bearer scheme is case-insensitive, the token is not', () => {
  const check = tokenChecker('Secret');
  assert.ok(check('bearer Secret'));
  assert.ok(check('BEARER Secret'));
  assert.ok(!check('Bearer secret'));
});

test('a token matches only itself, whatever the candidate length or encoding', () => {
  const equals = tokenEquals('s3cret-Tøken');
  assert.ok(equals('s3cret-Tøken'));
  for (const other of [
    '',
    's3cret-T',
    's3cret-Tøken ',
    's3cret-Tøken\u0000',
    'S3cret-Tøken',
    's3cret-Toeken', // as many UTF-8 bytes as the token, other content
    's3cret-To\u0308ken', // the same text in another Unicode normal form
    's3cret-Tøkenx'.repeat(1000),
  ])
    assert.ok(!equals(other), JSON.stringify(other.slice(0, 20)));
  assert.ok(!tokenEquals('')(''), 'an empty token never matches');
});

test('parseIpOrMac: a canonical MAC, an IPv4 address or RFC 5952 IPv6 text; nothing else', () => {
  assert.deepEqual(parseIpOrMac('AA-BB-CC-00-00-01'), { mac: 'aa:bb:cc:00:00:01' });
  assert.deepEqual(parseIpOrMac('aabb.cc00.0001'), { mac: 'aa:bb:cc:00:00:01' });
  assert.deepEqual(parseIpOrMac('192.168.1.5'), { ip: '192.168.1.5' });
  assert.deepEqual(parseIpOrMac('FD00:0:0:0:0:0:0:1'), { ip: 'fd00::1' });
  // A 12-hex-digit text is a MAC; an IPv6 literal never has 12 hex digits without a colon.
  assert.deepEqual(parseIpOrMac('aabbcc000001'), { mac: 'aa:bb:cc:00:00:01' });
  const pattern = new RegExp(ipOrMacPattern);
  for (const bad of [
    '',
    '-1',
    '--script=x',
    '010.0.0.1',
    '::ffff:10.0.0.1',
    '1.2.3',
    'fe80::1%eth0',
    'aa:bb',
  ]) {
    assert.equal(parseIpOrMac(bad), null, bad);
    if (bad.startsWith('-')) assert.equal(pattern.test(bad), false, bad);
  }
  // The pattern lets every accepted form through to the parser.
  for (const good of ['aa-bb-cc-00-00-01', 'aabb.cc00.0001', '10.0.0.1', '::1', 'fd00::1'])
    assert.ok(pattern.test(good), good);
});

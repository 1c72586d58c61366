import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  arpScanArgs,
  discoverSubnet,
  DiscoveryError,
  mergeSightings,
  nmapPingScanArgs,
  parseArpScan,
  parseNmapPingScan,
  type RunTool,
} from '../../src/scanner/discovery.js';
import { parseScanSubnets } from '../../src/scanner/subnets.js';
import { fixture } from './helpers.js';

const [subnet] = parseScanSubnets('10.231.77.0/24@br0');
if (!subnet) throw new Error('fixture subnet');

describe('parsers on real captured output', () => {
  test('arp-scan --plain --format: every responder with its vendor; unknown OUI gives an empty vendor', () => {
    assert.deepEqual(parseArpScan(fixture('arp-scan.txt')), [
      { mac: 'b8:27:eb:12:34:56', ip: '10.231.77.11', vendor: 'Raspberry Pi Foundation' },
      { mac: '00:50:56:aa:bb:01', ip: '10.231.77.12', vendor: 'VMware, Inc.' },
      { mac: '52:54:00:01:02:03', ip: '10.231.77.13', vendor: 'QEMU' },
      { mac: '02:42:ac:11:00:07', ip: '10.231.77.14', vendor: '' },
      { mac: '52:54:00:01:02:03', ip: '10.231.77.50', vendor: 'QEMU' },
    ]);
    assert.deepEqual(parseArpScan(fixture('arp-scan-empty.txt')), []);
  });

  test('nmap -sn -oX: MACs upper case normalised, vendor from nmap OUI data, none when unknown', () => {
    assert.deepEqual(parseNmapPingScan(fixture('nmap-sn.xml')), [
      { mac: 'b8:27:eb:12:34:56', ip: '10.231.77.11', vendor: 'Raspberry Pi Foundation' },
      { mac: '00:50:56:aa:bb:01', ip: '10.231.77.12', vendor: 'VMware' },
      { mac: '52:54:00:01:02:03', ip: '10.231.77.13', vendor: 'QEMU virtual NIC' },
      { mac: '02:42:ac:11:00:07', ip: '10.231.77.14', vendor: '' },
      { mac: '52:54:00:01:02:03', ip: '10.231.77.50', vendor: 'QEMU virtual NIC' },
    ]);
    assert.deepEqual(parseNmapPingScan(fixture('nmap-sn-empty.xml')), []);
  });

  test('nmap error run and non-XML are refused', () => {
    assert.throws(() => parseNmapPingScan(fixture('nmap-sn-nodev.xml')), /does it even exist/);
    assert.throws(() => parseNmapPingScan('Starting Nmap'), /no <nmaprun>|not XML/);
  });

  test('nmap on a down interface (every target skipped, exit 0) is refused, not "no hosts"', async () => {
    assert.throws(
      () => parseNmapPingScan(fixture('nmap-sn-ifdown.xml')),
      /nmap skipped 16 target\(s\), e\.g\. 10\.231\.77\.0 \(invalid: no route/,
    );
    const runTool: RunTool = async () => ({
      stdout: fixture('nmap-sn-ifdown.xml'),
      stderr: fixture('nmap-sn-ifdown.stderr'),
      exitCode: 0,
    });
    await assert.rejects(
      discoverSubnet(subnet, { runTool, tool: 'nmap', timeoutMs: 1000 }),
      (err) =>
        err instanceof DiscoveryError &&
        /skipped 16/.test(err.message) &&
        /failed to determine route/.test(err.details ?? ''),
    );
  });

  test('hostile lines in arp-scan output are skipped, not trusted', () => {
    const text = '10.0.0.1\t-oops\tX\n999.1.1.1\t00:11:22:33:44:55\tX\n10.0.0.2\t00:11:22:33:44:55\tOK\n\n';
    assert.deepEqual(parseArpScan(text), [{ mac: '00:11:22:33:44:55', ip: '10.0.0.2', vendor: 'OK' }]);
  });
});

describe('discoverSubnet through an injected RunTool', () => {
  test('builds argument arrays from the validated subnet only', () => {
    assert.deepEqual(arpScanArgs(subnet), [
      '--interface=br0',
      '--retry=3',
      '--plain',
      '--numeric',
      '--format=${ip}\\t${mac}\\t${vendor}',
      '10.231.77.0/24',
    ]);
    assert.deepEqual(nmapPingScanArgs(subnet), ['-sn', '-n', '-e', 'br0', '-oX', '-', '10.231.77.0/24']);
  });

  test('replayed arp-scan output becomes sightings; the runner gets tool, args, timeout and signal', async () => {
    const calls: unknown[] = [];
    const controller = new AbortController();
    const runTool: RunTool = async (tool, args, options) => {
      calls.push([tool, args, options.timeoutMs, options.signal === controller.signal]);
      return { stdout: fixture('arp-scan.txt'), stderr: '', exitCode: 0 };
    };
    const sightings = await discoverSubnet(subnet, {
      runTool,
      tool: 'arp-scan',
      timeoutMs: 1234,
      signal: controller.signal,
    });
    assert.equal(sightings.length, 5);
    assert.deepEqual(calls, [['arp-scan', arpScanArgs(subnet), 1234, true]]);
  });

  test('a missing interface (real arp-scan and nmap failures) throws DiscoveryError naming the subnet', async () => {
    const arpFailure: RunTool = async () => ({
      stdout: fixture('arp-scan-nodev.stdout'),
      stderr: fixture('arp-scan-nodev.stderr'),
      exitCode: 1,
    });
    await assert.rejects(
      discoverSubnet(subnet, { runTool: arpFailure, tool: 'arp-scan', timeoutMs: 1000 }),
      (err) => {
        assert.ok(err instanceof DiscoveryError);
        assert.equal(err.subnet, '10.231.77.0/24@br0');
        assert.match(err.message, /exit code 1: pcap_activate: nosuch0: No such device exists/);
        return true;
      },
    );
    const nmapFailure: RunTool = async () => ({
      stdout: fixture('nmap-sn-nodev.xml'),
      stderr: fixture('nmap-sn-nodev.stderr'),
      exitCode: 1,
    });
    await assert.rejects(
      discoverSubnet(subnet, { runTool: nmapFailure, tool: 'nmap', timeoutMs: 1000 }),
      /nmap on 10.231.77.0\/24@br0 failed with exit code 1: I cannot figure out/,
    );
  });

  test('a runner that rejects (not installed, timeout) becomes DiscoveryError with the cause kept', async () => {
    const cause = Object.assign(new Error('arp-scan is not installed'), { statusCode: 503 });
    const runTool: RunTool = async () => {
      throw cause;
    };
    await assert.rejects(discoverSubnet(subnet, { runTool, tool: 'arp-scan', timeoutMs: 1000 }), (err) => {
      assert.ok(err instanceof DiscoveryError);
      assert.equal(err.cause, cause);
      return true;
    });
  });
});

describe('mergeSightings', () => {
  test('a MAC seen twice on one subnet and again on a second is one observation, deterministic', () => {
    const first = parseArpScan(fixture('arp-scan.txt'));
    const second = [{ mac: '52:54:00:01:02:03', ip: '10.231.80.4', vendor: 'QEMU' }];
    const merged = mergeSightings([
      { tool: 'arp-scan', sightings: first },
      { tool: 'nmap', sightings: second },
    ]);
    assert.equal(merged.size, 4);
    assert.deepEqual(merged.get('52:54:00:01:02:03'), {
      ips: ['10.231.77.13', '10.231.77.50', '10.231.80.4'],
      vendor: 'QEMU',
      source: 'arp-scan',
    });
  });

  test('IPs are ordered numerically, not as text; vendor is the first non-empty one', () => {
    const merged = mergeSightings([
      { tool: 'nmap', sightings: [{ mac: '00:00:00:00:00:01', ip: '10.0.0.10', vendor: '' }] },
      { tool: 'nmap', sightings: [{ mac: '00:00:00:00:00:01', ip: '10.0.0.9', vendor: 'V' }] },
    ]);
    assert.deepEqual(merged.get('00:00:00:00:00:01'), {
      ips: ['10.0.0.9', '10.0.0.10'],
      vendor: 'V',
      source: 'nmap',
    });
  });
});

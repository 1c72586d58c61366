import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { DomainError } from '../../src/errors.js';
import type { RunTool, ToolResult } from '../../src/scanner/discovery.js';
import { Scanner, scanTool, type ScannerOptions } from '../../src/scanner/scanner.js';
import { SqliteDeviceStore } from '../../src/store/sqlite/device-store.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { storesOf } from '../helpers/scan-store.js';
import { planCycle } from '../../src/scanner/state-machine.js';
import { dumpTables, fixture, tempDb } from './helpers.js';
import { eventually } from '../helpers/processes.js';

const logger = pino({ level: 'silent' });
const arpOk: ToolResult = { stdout: fixture('arp-scan.txt'), stderr: '', exitCode: 0 };
const arpNoDevice: ToolResult = {
  stdout: fixture('arp-scan-nodev.stdout'),
  stderr: fixture('arp-scan-nodev.stderr'),
  exitCode: 1,
};

function config(subnets: string, extra: Record<string, string> = {}): ScannerOptions['config'] {
  return loadConfig({ SCAN_SUBNETS: subnets, ...extra }, '/nonexistent');
}

function clock(start = '2025-03-01T12:00:00Z'): { now: () => Date; advance: (ms: number) => void } {
  let time = new Date(start).getTime();
  return {
    now: () => new Date(time),
    advance: (ms) => {
      time += ms;
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe('Scanner cycles', () => {
  test('a cycle whose discovery fails on one subnet changes nothing (full table dumps equal)', async () => {
    const handle = tempDb();
    try {
      const c = clock();
      let failSecond = false;
      const runTool: RunTool = async (_tool, args) =>
        failSecond && args.includes('--interface=nosuch0') ? arpNoDevice : arpOk;
      const scanner = new Scanner({
        ...storesOf(handle.db),
        config: config('10.231.77.0/24@br0,10.231.78.0/24@nosuch0'),
        logger,
        runTool,
        now: c.now,
      });
      const first = await scanner.runNow();
      assert.equal(first.newDevices, 4);
      assert.deepEqual(first.errors, []);
      const before = dumpTables(handle.db);
      c.advance(300_000);
      failSecond = true;
      await assert.rejects(scanner.runNow(), (err) => {
        assert.ok(err instanceof DomainError);
        assert.equal(err.kind, 'command-failed');
        assert.equal(err.code, 'SCAN_FAILED');
        assert.match(
          err.message,
          /changed nothing: arp-scan on 10.231.78.0\/24@nosuch0 failed with exit code 1/,
        );
        return true;
      });
      assert.deepEqual(dumpTables(handle.db), before);
      const status = scanner.status();
      assert.equal(status.running, false);
      const last = status.lastCycle;
      assert.ok(last);
      assert.equal(last.newDevices, 0);
      assert.equal(last.errors.length, 1);
      assert.equal(last.startedAt, '2025-03-01T12:05:00.000Z');
      await scanner.stop();
    } finally {
      handle.remove();
    }
  });

  test('import then scan: devices of other networks get no event and keep their state (DESIGN 13 scope)', async () => {
    const handle = tempDb();
    try {
      const devices = new SqliteDevices(handle.db);
      // An import of another network: 300 present devices (open sessions, some alerting on Down),
      // as a first cycle over their own subnet left them.
      const imported = new Map(
        Array.from({ length: 300 }, (_, i) => [
          `02:aa:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`,
          { ips: [`192.168.${50 + (i >> 8)}.${i & 255}`], vendor: '', source: 'arp-scan' as const },
        ]),
      );
      devices.presence.apply(
        planCycle({
          known: devices.presence.load(),
          observations: imported,
          missesBeforeAbsent: 1,
          now: new Date('2025-03-01T11:00:00Z'),
        }),
      );
      for (const mac of [...imported.keys()].slice(0, 100))
        handle.db.prepare('UPDATE Devices SET devAlertDown = 1 WHERE devMac = ?').run(mac);
      const importedRows = (): unknown[] =>
        handle.db.prepare("SELECT * FROM Devices WHERE devMac LIKE '02:aa:%' ORDER BY devMac").all();
      const importedHistory = (): unknown[] => [
        handle.db.prepare("SELECT rowid, * FROM Events WHERE eve_MAC LIKE '02:aa:%' ORDER BY rowid").all(),
        handle.db.prepare("SELECT rowid, * FROM Sessions WHERE ses_MAC LIKE '02:aa:%' ORDER BY rowid").all(),
        handle.db.prepare("SELECT * FROM ScanState WHERE mac LIKE '02:aa:%' ORDER BY mac").all(),
      ];
      const rowsBefore = importedRows();
      const historyBefore = importedHistory();
      const scanner = new Scanner({
        devices: new SqliteDeviceStore(devices),
        presence: new SqliteDeviceStore(devices),
        config: config('10.231.77.0/24@br0'),
        logger,
        runTool: async () => arpOk,
        now: clock().now,
      });
      for (let i = 0; i < 3; i++) {
        const summary = await scanner.runNow();
        assert.deepEqual(summary.errors, []);
      }
      // The scanned subnet's devices were found; the imported ones are untouched: no Disconnected,
      // no Device Down, no miss, sessions still open, still present.
      assert.equal(
        (
          handle.db.prepare("SELECT COUNT(*) AS n FROM Devices WHERE devLastIP LIKE '10.231.77.%'").get() as {
            n: number;
          }
        ).n,
        4,
      );
      assert.deepEqual(importedRows(), rowsBefore);
      assert.deepEqual(importedHistory(), historyBefore);
      assert.deepEqual(
        handle.db
          .prepare(
            'SELECT eve_EventType AS type, COUNT(*) AS n FROM Events GROUP BY eve_EventType ORDER BY type',
          )
          .all(),
        [{ type: 'New Device', n: 304 }],
      );
      await scanner.stop();
    } finally {
      handle.remove();
    }
  });

  test('an interface the check calls dead fails the cycle before any tool runs; nothing changes', async () => {
    const handle = tempDb();
    try {
      let linkDown = false;
      const tools: string[][] = [];
      const runTool: RunTool = async (tool, args) => {
        tools.push([tool, ...args]);
        // What arp-scan answers with no carrier: exit 0, nobody there.
        return linkDown ? { stdout: fixture('arp-scan-empty.txt'), stderr: '', exitCode: 0 } : arpOk;
      };
      const checked: string[] = [];
      const scanner = new Scanner({
        ...storesOf(handle.db),
        config: config('10.231.77.0/24@br0'),
        logger,
        runTool,
        checkInterface: (iface) => {
          checked.push(iface);
          return linkDown ? `interface ${iface} is down (operstate down)` : undefined;
        },
      });
      assert.equal((await scanner.runNow()).newDevices, 4);
      const before = dumpTables(handle.db);
      linkDown = true;
      await assert.rejects(scanner.runNow(), (err) => {
        assert.ok(err instanceof DomainError);
        assert.equal(err.kind, 'command-failed');
        assert.equal(err.code, 'SCAN_FAILED');
        assert.match(err.message, /cannot scan 10.231.77.0\/24@br0: interface br0 is down/);
        return true;
      });
      assert.deepEqual(dumpTables(handle.db), before);
      assert.deepEqual(checked, ['br0', 'br0']);
      // The first cycle's discovery and IPv6 neighbours (ping, ip); none in the failed one.
      assert.deepEqual(
        tools.map((t) => t[0]),
        ['arp-scan', 'ping', 'ip'],
      );
      await scanner.stop();
    } finally {
      handle.remove();
    }
  });

  test('SCAN_IPV6: IPv6-only hosts found, devPrimaryIPv6 kept, judged by their IPv6 scope; no IPv6 is no error', async () => {
    const handle = tempDb();
    try {
      const c = clock();
      const h1 = 'aa:88:3b:81:b4:61'; // dual-stack (and in the arp-scan output below)
      const h2 = 'ee:4e:37:79:0c:2b'; // IPv6 only
      let table = fixture('ip-neigh6.json');
      let echo: ToolResult = { stdout: fixture('ping6-allnodes.txt'), stderr: '', exitCode: 0 };
      const runTool: RunTool = async (tool) => {
        if (tool === 'ping') return echo;
        if (tool === 'ip') return { stdout: table, stderr: '', exitCode: 0 };
        return { stdout: `10.231.77.11\t${h1}\tAcme\n`, stderr: '', exitCode: 0 };
      };
      const devices = new SqliteDevices(handle.db);
      const scanner = new Scanner({
        devices: new SqliteDeviceStore(devices),
        presence: new SqliteDeviceStore(devices),
        config: config('10.231.77.0/24@br0'),
        logger,
        runTool,
        now: c.now,
      });
      assert.deepEqual((await scanner.runNow()).newDevices, 3);
      const row = (mac: string): unknown =>
        handle.db
          .prepare(
            'SELECT devLastIP, devPrimaryIPv6, devSourcePlugin, devPresentLastScan FROM Devices WHERE devMac = ?',
          )
          .get(mac);
      assert.deepEqual(row(h1), {
        devLastIP: '10.231.77.11',
        devPrimaryIPv6: 'fd00:231::11',
        devSourcePlugin: 'arp-scan',
        devPresentLastScan: 1,
      });
      assert.deepEqual(row(h2), {
        devLastIP: '',
        devPrimaryIPv6: 'fe80::ec4e:37ff:fe79:c2b',
        devSourcePlugin: 'ipv6-neighbours',
        devPresentLastScan: 1,
      });
      const events = (mac: string): unknown[] =>
        handle.db
          .prepare("SELECT eve_EventType || ' ' || eve_IP FROM Events WHERE eve_MAC = ? ORDER BY rowid")
          .pluck()
          .all(mac);
      assert.deepEqual(events(h2), ['New Device fe80::ec4e:37ff:fe79:c2b']);

      // An interface without IPv6 this time: no error, and the IPv6-only host is out of scope.
      c.advance(300_000);
      echo = { stdout: '', stderr: fixture('ping6-noipv6.stderr'), exitCode: 1 };
      assert.deepEqual((await scanner.runNow()).errors, []);
      assert.deepEqual(events(h2), ['New Device fe80::ec4e:37ff:fe79:c2b']);
      assert.equal((row(h1) as { devPrimaryIPv6: string }).devPrimaryIPv6, 'fd00:231::11');

      // IPv6 back, the IPv6-only host gone from the table's answers: Disconnected at its address.
      c.advance(300_000);
      echo = { stdout: fixture('ping6-allnodes.txt'), stderr: '', exitCode: 0 };
      table = JSON.stringify(
        (JSON.parse(table) as { lladdr: string }[]).filter((entry) => entry.lladdr !== h2),
      );
      assert.deepEqual((await scanner.runNow()).errors, []);
      assert.deepEqual(events(h2), [
        'New Device fe80::ec4e:37ff:fe79:c2b',
        'Disconnected fe80::ec4e:37ff:fe79:c2b',
      ]);
      assert.equal((row(h2) as { devPresentLastScan: number }).devPresentLastScan, 0);
      await scanner.stop();
    } finally {
      handle.remove();
    }
  });

  test('scanning not configured: runNow is a 409 and status says disabled', async () => {
    const handle = tempDb();
    try {
      const scanner = new Scanner({
        ...storesOf(handle.db),
        config: config(''),
        logger,
        runTool: async () => arpOk,
      });
      await assert.rejects(scanner.runNow(), (err) => err instanceof DomainError && err.kind === 'conflict');
      assert.deepEqual(scanner.status(), { enabled: false, running: false, lastCycle: null });
    } finally {
      handle.remove();
    }
  });

  test('SCAN_TOOL: auto is arp-scan when installed, else nmap -sn; explicit settings are kept', () => {
    assert.equal(scanTool('auto', true), 'arp-scan');
    assert.equal(scanTool('auto', false), 'nmap');
    assert.equal(scanTool('arp-scan', false), 'arp-scan');
    assert.equal(scanTool('nmap', true), 'nmap');
  });

  test('SCAN_TOOL=auto without arp-scan runs nmap -sn from the first cycle on', async () => {
    const handle = tempDb();
    try {
      const tools: string[] = [];
      const runTool: RunTool = async (tool) => {
        tools.push(tool);
        return { stdout: fixture('nmap-sn.xml'), stderr: '', exitCode: 0 };
      };
      const scanner = new Scanner({
        ...storesOf(handle.db),
        config: config('10.231.77.0/24@br0', { SCAN_IPV6: 'off' }),
        logger,
        runTool,
        arpScanInstalled: false,
      });
      assert.equal((await scanner.runNow()).devicesSeen, 4);
      await scanner.runNow();
      assert.deepEqual(tools, ['nmap', 'nmap']);
      assert.equal(
        handle.db
          .prepare("SELECT devSourcePlugin FROM Devices WHERE devMac = 'b8:27:eb:12:34:56'")
          .pluck()
          .get(),
        'nmap',
      );
    } finally {
      handle.remove();
    }
  });

  test('a shutting-down outcome from the runner fails the cycle; the tool stays arp-scan', async () => {
    const handle = tempDb();
    try {
      const tools: string[] = [];
      const runTool: RunTool = async (tool) => {
        tools.push(tool);
        throw new DomainError('shutting-down', 'The server is shutting down; the command was stopped.');
      };
      const scanner = new Scanner({
        ...storesOf(handle.db),
        config: config('10.231.77.0/24@br0'),
        logger,
        runTool,
      });
      await assert.rejects(scanner.runNow());
      assert.deepEqual(tools, ['arp-scan']);
    } finally {
      handle.remove();
    }
  });
});

describe('Scanner loop', () => {
  test('cycles never overlap when they overrun the interval; runNow during a cycle is a 409', async () => {
    const handle = tempDb();
    try {
      let running = 0;
      let maxRunning = 0;
      let calls = 0;
      let release = (): void => undefined;
      const firstCycleHeld = new Promise<void>((resolve) => {
        release = resolve;
      });
      const runTool: RunTool = async () => {
        running++;
        calls++;
        maxRunning = Math.max(maxRunning, running);
        // Every cycle overruns the 5 ms interval; the first one until the test lets it go.
        await (calls === 1 ? firstCycleHeld : sleep(20));
        running--;
        return arpOk;
      };
      const scanner = new Scanner({
        ...storesOf(handle.db),
        config: config('10.231.77.0/24@br0'),
        logger,
        runTool,
        testOnlyIntervalMs: 5,
      });
      scanner.start();
      assert.ok(await eventually(() => calls === 1), 'the first cycle started');
      assert.equal(scanner.status().running, true);
      await assert.rejects(scanner.runNow(), (err) => err instanceof DomainError && err.kind === 'conflict');
      release();
      assert.ok(await eventually(() => calls >= 4), 'later cycles ran');
      await scanner.stop();
      assert.equal(maxRunning, 1);
      const cycles = handle.db
        .prepare("SELECT count(*) FROM Events WHERE eve_EventType = 'New Device'")
        .pluck()
        .get();
      assert.equal(cycles, 4, 'devices were created once, by the first cycle');
    } finally {
      handle.remove();
    }
  });

  test('stop() aborts a running discovery through its AbortSignal; the cycle changes nothing', async () => {
    const handle = tempDb();
    try {
      const flag = { started: false };
      const runTool: RunTool = (_tool, _args, options) =>
        new Promise((_resolve, reject) => {
          flag.started = true;
          options.signal?.addEventListener('abort', () => {
            reject(new Error('aborted'));
          });
        });
      const scanner = new Scanner({
        ...storesOf(handle.db),
        config: config('10.231.77.0/24@br0'),
        logger,
        runTool,
      });
      scanner.start();
      assert.ok(await eventually(() => flag.started), 'the discovery started');
      const before = dumpTables(handle.db);
      await scanner.stop();
      assert.deepEqual(dumpTables(handle.db), before);
      assert.match(scanner.status().lastCycle?.errors[0] ?? '', /could not run: aborted/);
      assert.equal(scanner.status().running, false);
    } finally {
      handle.remove();
    }
  });
});

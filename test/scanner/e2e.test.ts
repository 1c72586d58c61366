/**
 * Presence scanning end to end: the real server (child process, real SQLite file) scans a test LAN
 * of network namespaces with the real arp-scan / nmap through the shared tool runner, and the
 * history is checked over HTTP after every cycle against an expected history kept by the test.
 *
 * The LAN: the router (its bridge answers ARP, so it is a device too), hosts h1..h3 (A, B, C), later
 * D. The scanning host itself (lan.rootAddress) is never reported by either tool. Cycles are driven
 * by POST /nettools/scan (SCAN_INTERVAL is a day, so only the automatic first cycle at start runs
 * on its own). Failed cycles (interface down, carrier lost, interface missing) are checked to
 * change nothing with a dump of the database file, opened read-only.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { createTestLan, testLanSkipReason, type LanHost, type TestLan } from '../helpers/testlan.js';
import { eventually } from '../helpers/processes.js';
import { TestServer } from '../helpers/server.js';
import { dumpTables, waitForFirstCycle } from './helpers.js';
import type { EventJson, SessionJson } from '../../src/devices/history.js';

const skip = testLanSkipReason('presence scanning e2e tests');

type Status = 'On-line' | 'Off-line' | 'Down';

interface CycleWindow {
  /** startedAt, floored to the second (stored times have no fraction). */
  readonly from: number;
  readonly to: number;
}

interface ExpectedEvent {
  readonly type: string;
  readonly ip: string;
  readonly info: string;
  readonly cycle: number;
}

interface ExpectedSession {
  readonly ip: string;
  readonly opened: string;
  readonly cycleOpened: number;
  closed: { type: string; cycle: number } | null;
}

interface ExpectedDevice {
  readonly mac: string;
  readonly label: string;
  ip: string;
  status: Status;
  readonly vendor: string;
  readonly source: string;
  readonly events: ExpectedEvent[];
  readonly sessions: ExpectedSession[];
}

interface CycleSummary {
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  devicesSeen: number;
  newDevices: number;
  errors: string[];
}

/** The history the test expects, built step by step as the LAN changes. */
class History {
  readonly devices = new Map<string, ExpectedDevice>();
  readonly windows: CycleWindow[] = [];

  get cycle(): number {
    return this.windows.length - 1;
  }

  device(mac: string): ExpectedDevice {
    const device = this.devices.get(mac);
    assert.ok(device, `no expected device ${mac}`);
    return device;
  }

  newDevice(mac: string, label: string, ip: string, vendor: string, source: string): void {
    const cycle = this.cycle;
    this.devices.set(mac, {
      mac,
      label,
      ip,
      status: 'On-line',
      vendor,
      source,
      events: [{ type: 'New Device', ip, info: '', cycle }],
      sessions: [{ ip, opened: 'New Device', cycleOpened: cycle, closed: null }],
    });
  }

  gone(mac: string, type: 'Disconnected' | 'Device Down'): void {
    const device = this.device(mac);
    device.events.push({ type, ip: device.ip, info: '', cycle: this.cycle });
    const session = device.sessions.at(-1);
    assert.ok(session && session.closed === null);
    session.closed = { type, cycle: this.cycle };
    device.status = type === 'Device Down' ? 'Down' : 'Off-line';
  }

  back(mac: string, ip: string): void {
    const device = this.device(mac);
    const type = device.status === 'Down' ? 'Down Reconnected' : 'Connected';
    device.ip = ip;
    device.events.push({ type, ip, info: '', cycle: this.cycle });
    device.sessions.push({ ip, opened: type, cycleOpened: this.cycle, closed: null });
    device.status = 'On-line';
  }

  ipChanged(mac: string, ip: string): void {
    const device = this.device(mac);
    // The open session keeps the IP it connected with (docs/api/scanning.md).
    device.events.push({ type: 'IP Changed', ip, info: `Previous IP: ${device.ip}`, cycle: this.cycle });
    device.ip = ip;
  }
}

function within(time: string | null, window: CycleWindow | undefined, what: string): void {
  assert.ok(time !== null && window, `${what}: no time or no cycle`);
  const at = Date.parse(time);
  assert.ok(at >= window.from && at <= window.to, `${what}: ${time} is not within its cycle`);
}

/** A read-only dump of every table the scanner writes (the server keeps running). */
function dumpDatabase(dataDir: string): Record<string, unknown[]> {
  const db = new Database(join(dataDir, 'netkeep.db'), { readonly: true, fileMustExist: true });
  try {
    return dumpTables(db);
  } finally {
    db.close();
  }
}

/** The automatic cycle at start (SCAN_INTERVAL is a day, so it is the only one). */
function windowOf(summary: CycleSummary): CycleWindow {
  return {
    from: Math.floor(Date.parse(summary.startedAt) / 1000) * 1000,
    to: Date.parse(summary.finishedAt),
  };
}

/** Runs one cycle over HTTP, checks its summary, and records its time window. */
async function runCycle(
  server: TestServer,
  history: History,
  expected: { devicesSeen: number; newDevices: number },
): Promise<void> {
  const res = await server.request('POST', '/nettools/scan');
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json.success, true);
  assert.equal(res.json.running, false);
  const summary = res.json.lastCycle as CycleSummary;
  assert.deepEqual(
    { devicesSeen: summary.devicesSeen, newDevices: summary.newDevices, errors: summary.errors },
    { ...expected, errors: [] },
  );
  // GET reports the same last cycle.
  const status = await server.request('GET', '/nettools/scan');
  assert.deepEqual(status.json.lastCycle, summary);
  history.windows.push(windowOf(summary));
}

function key(value: { type: string; ip: string; info: string }): string {
  return `${value.type}|${value.ip}|${value.info}`;
}

/** GET /device/<mac>, its events and its sessions against the expected history. */
async function checkDevice(server: TestServer, history: History, device: ExpectedDevice): Promise<void> {
  const what = `${device.label} (${device.mac})`;
  const res = await server.request('GET', `/device/${device.mac}`);
  assert.equal(res.status, 200, what);
  const d = res.json;
  assert.deepEqual(
    {
      devStatus: d.devStatus,
      devLastIP: d.devLastIP,
      devPresentLastScan: d.devPresentLastScan,
      devSessions: d.devSessions,
      devEvents: d.devEvents,
      devDownAlerts: d.devDownAlerts,
      devVendor: d.devVendor,
      devSourcePlugin: d.devSourcePlugin,
      devIsNew: d.devIsNew,
    },
    {
      devStatus: device.status,
      devLastIP: device.ip,
      devPresentLastScan: device.status === 'On-line' ? 1 : 0,
      devSessions: device.sessions.length,
      // Connected / Disconnected do not count (DESIGN 4).
      devEvents: device.events.filter((e) => e.type !== 'Connected' && e.type !== 'Disconnected').length,
      devDownAlerts: device.events.filter((e) => e.type === 'Device Down').length,
      devVendor: device.vendor,
      devSourcePlugin: device.source,
      devIsNew: 1,
    },
    what,
  );
  assert.equal(typeof d.devPresenceHours, 'number', what);
  assert.ok(Number(d.devPresenceHours) >= 0, what);

  const events = await server.request('GET', `/device/${device.mac}/events`);
  assert.equal(events.status, 200, what);
  assert.equal(events.json.total, device.events.length, what);
  const apiEvents = events.json.events as EventJson[];
  for (let i = 1; i < apiEvents.length; i++) {
    const [newer, older] = [apiEvents[i - 1], apiEvents[i]];
    assert.ok(newer && older && newer.eve_DateTime >= older.eve_DateTime, `${what}: newest first`);
  }
  assert.deepEqual(
    apiEvents.map((e) => key({ type: e.eve_EventType, ip: e.eve_IP, info: e.eve_AdditionalInfo })).sort(),
    device.events.map(key).sort(),
    what,
  );
  // Each expected event was recorded by its own cycle (matched with the time window of that cycle).
  const unmatched = [...apiEvents];
  for (const event of device.events) {
    const window = history.windows[event.cycle];
    const index = unmatched.findIndex(
      (e) =>
        key({ type: e.eve_EventType, ip: e.eve_IP, info: e.eve_AdditionalInfo }) === key(event) &&
        window !== undefined &&
        Date.parse(e.eve_DateTime) >= window.from &&
        Date.parse(e.eve_DateTime) <= window.to,
    );
    assert.ok(index >= 0, `${what}: ${event.type} of cycle ${event.cycle} not found`);
    unmatched.splice(index, 1);
  }
  assert.ok(apiEvents.every((e) => e.eve_MAC === device.mac));

  const sessions = await server.request('GET', `/device/${device.mac}/sessions`);
  assert.equal(sessions.status, 200, what);
  assert.equal(sessions.json.total, device.sessions.length, what);
  const apiSessions = sessions.json.sessions as SessionJson[];
  const newestFirst = [...device.sessions].reverse();
  assert.deepEqual(
    apiSessions.map((s) => ({
      ip: s.ses_IP,
      opened: s.ses_EventTypeConnection,
      closed: s.ses_EventTypeDisconnection,
      still: s.ses_StillConnected,
      hasEnd: s.ses_DateTimeDisconnection !== null,
    })),
    newestFirst.map((s) => ({
      ip: s.ip,
      opened: s.opened,
      closed: s.closed?.type ?? '',
      still: s.closed === null ? 1 : 0,
      hasEnd: s.closed !== null,
    })),
    what,
  );
  newestFirst.forEach((s, i) => {
    const api = apiSessions[i];
    assert.ok(api);
    within(api.ses_DateTimeConnection, history.windows[s.cycleOpened], `${what} session ${i} start`);
    if (s.closed) within(api.ses_DateTimeDisconnection, history.windows[s.closed.cycle], `${what} end`);
  });
  // With every session closed, presence hours are exactly the sessions' lengths (no "now" involved).
  if (apiSessions.every((s) => s.ses_StillConnected === 0)) {
    const seconds = apiSessions.reduce(
      (sum, s) =>
        sum +
        (Date.parse(s.ses_DateTimeDisconnection ?? '') - Date.parse(s.ses_DateTimeConnection ?? '')) / 1000,
      0,
    );
    assert.equal(d.devPresenceHours, Math.round(seconds / 36) / 100, what);
  }
}

/** Every expected device, GET /devices, and the status filters. */
async function checkAll(server: TestServer, history: History): Promise<void> {
  for (const device of history.devices.values()) await checkDevice(server, history, device);
  const list = await server.request('GET', '/devices');
  assert.equal(list.status, 200);
  const devices = list.json.devices as { devMac: string; devStatus: string }[];
  assert.deepEqual(
    devices.map((d) => [d.devMac, d.devStatus]),
    [...history.devices.values()].map((d) => [d.mac, d.status]).sort(),
  );
  assert.equal(list.json.total, history.devices.size);
  for (const status of ['On-line', 'Off-line', 'Down'] as const) {
    const filtered = await server.request('GET', `/devices?status=${encodeURIComponent(status)}`);
    assert.equal(filtered.status, 200);
    assert.deepEqual(
      (filtered.json.devices as { devMac: string }[]).map((d) => d.devMac),
      [...history.devices.values()]
        .filter((d) => d.status === status)
        .map((d) => d.mac)
        .sort(),
      `status=${status}`,
    );
  }
}

/** POST /nettools/scan must fail with a 500 naming `pattern`, and change nothing at all. */
async function expectFailedCycle(server: TestServer, pattern: RegExp): Promise<void> {
  const before = dumpDatabase(server.dataDir);
  const listBefore = await server.request('GET', '/devices');
  const res = await server.request('POST', '/nettools/scan');
  assert.equal(res.status, 500, res.text);
  assert.equal(res.json.success, false);
  assert.equal(res.json.error, 'Scan Failed');
  assert.match(String(res.json.message), /changed nothing/);
  assert.match(String(res.json.details), pattern);
  const status = await server.request('GET', '/nettools/scan');
  const lastCycle = status.json.lastCycle as CycleSummary;
  assert.equal(lastCycle.newDevices, 0);
  assert.ok(
    lastCycle.errors.some((e) => pattern.test(e)),
    lastCycle.errors.join('; '),
  );
  assert.deepEqual(dumpDatabase(server.dataDir), before);
  assert.deepEqual((await server.request('GET', '/devices')).body, listBefore.body);
}

function host(lan: TestLan, name: string): LanHost {
  const found = lan.hosts.get(name);
  assert.ok(found, `no host ${name}`);
  return found;
}

/** A MAC with Intel's OUI (00:1b:21), so both tools' OUI data name a vendor. */
function intelMac(): string {
  return `00:1b:21:${[...randomBytes(3)].map((b) => b.toString(16).padStart(2, '0')).join(':')}`;
}

const intelVendor = 'Intel Corporate';

describe('presence scanning end to end on a test LAN', { skip }, () => {
  let lan: TestLan;
  const servers: TestServer[] = [];
  const dirs: string[] = [];

  before(async () => {
    lan = await createTestLan({ hosts: 3, far: false });
  });
  after(async () => {
    for (const server of servers) await server.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    await lan.destroy();
  });

  async function start(env: Record<string, string>, dataDir?: string): Promise<TestServer> {
    const server = await TestServer.start({ env: { SCAN_INTERVAL: '86400', ...env }, dataDir });
    servers.push(server);
    return server;
  }

  test('arp-scan: new devices, a host leaving, an IP change, a down alert, hosts coming back', async () => {
    const [a, b, c] = [host(lan, 'h1'), host(lan, 'h2'), host(lan, 'h3')];
    const cMac = c.mac;
    const cIp = c.ip;
    const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-e2e-'));
    dirs.push(dataDir);
    const server = await start(
      { SCAN_SUBNETS: `${lan.subnet}@${lan.lanInterface}`, SCAN_TOOL: 'arp-scan' },
      dataDir,
    );
    const history = new History();

    // Cycle 0: the automatic one at start. Everyone is new; the router is a device too.
    const first = await waitForFirstCycle(server);
    const summary = first.lastCycle as CycleSummary;
    assert.deepEqual([summary.devicesSeen, summary.newDevices, summary.errors], [4, 4, []]);
    history.windows.push(windowOf(summary));
    history.newDevice(lan.routerMac, 'router', lan.gateway, '', 'arp-scan');
    for (const [label, h] of [
      ['A', a],
      ['B', b],
      ['C', c],
    ] as const)
      history.newDevice(h.mac, label, h.ip, '', 'arp-scan');
    // The router's MAC stays fixed while hosts come and go (the helper pins the bridge's address).
    const routerMac = await lan.exec(lan.routerNs, ['cat', '/sys/class/net/br0/address']);
    assert.equal(routerMac.trim(), lan.routerMac);
    await checkAll(server, history);

    // devAlertDown on B changes no status while it is present.
    const alert = await server.request('POST', `/device/${b.mac}/update-column`, {
      body: { columnName: 'devAlertDown', columnValue: 1 },
    });
    assert.deepEqual([alert.status, alert.body], [200, { success: true }]);
    await checkAll(server, history);

    // Cycle 1: D joins (with a MAC whose vendor the OUI data knows).
    const d = await lan.addHost('h4', { mac: intelMac() });
    await runCycle(server, history, { devicesSeen: 5, newDevices: 1 });
    history.newDevice(d.mac, 'D', d.ip, intelVendor, 'arp-scan');
    await checkAll(server, history);

    // Cycle 2: C leaves.
    await lan.removeHost('h3');
    await runCycle(server, history, { devicesSeen: 4, newDevices: 0 });
    history.gone(cMac, 'Disconnected');
    await checkAll(server, history);

    // Cycle 3: A moves to another address.
    const aNewIp = lan.freeIp();
    await lan.setHostIp('h1', aNewIp);
    await runCycle(server, history, { devicesSeen: 4, newDevices: 0 });
    history.ipChanged(a.mac, aNewIp);
    await checkAll(server, history);

    // Cycle 4: B (devAlertDown) leaves: Device Down.
    await lan.removeHost('h2');
    await runCycle(server, history, { devicesSeen: 3, newDevices: 0 });
    history.gone(b.mac, 'Device Down');
    await checkAll(server, history);
    const down = await server.request('GET', '/devices?status=Down');
    assert.deepEqual(
      (down.json.devices as { devMac: string }[]).map((x) => x.devMac),
      [b.mac],
    );

    // Cycle 5: B and C come back with their MACs and addresses.
    await lan.addHost('h2', { mac: b.mac, ip: b.ip });
    await lan.addHost('h3', { mac: cMac, ip: cIp });
    await runCycle(server, history, { devicesSeen: 5, newDevices: 0 });
    history.back(b.mac, b.ip);
    history.back(cMac, cIp);
    await checkAll(server, history);
    assert.equal(history.device(b.mac).events.at(-1)?.type, 'Down Reconnected');

    // Cycle 6: nothing changed on the LAN, so nothing changes in the history.
    await runCycle(server, history, { devicesSeen: 5, newDevices: 0 });
    await checkAll(server, history);

    // Failed cycles change nothing: the interface administratively down (arp-scan refuses it) ...
    await setLink(lan.lanInterface, 'down');
    try {
      await expectFailedCycle(server, new RegExp(`${lan.lanInterface}.*(not up|down)`));
    } finally {
      await setLink(lan.lanInterface, 'up');
    }
    // ... and the interface up but without carrier (its peer down: a cable pulled). Both tools
    // would answer "no hosts" here, which must not mark every device as gone.
    await lan.exec(lan.routerNs, ['/usr/sbin/ip', 'link', 'set', 'lroot', 'down']);
    try {
      await waitForOperstate(lan.lanInterface, (operstate) => operstate !== 'up');
      await expectFailedCycle(server, new RegExp(`${lan.lanInterface}.*down`));
    } finally {
      await lan.exec(lan.routerNs, ['/usr/sbin/ip', 'link', 'set', 'lroot', 'up']);
      await waitForOperstate(lan.lanInterface, (operstate) => operstate === 'up');
    }
    await checkAll(server, history);

    // A SCAN_SUBNETS entry naming an interface that does not exist (after one that works): every
    // cycle fails, so a restart on the same database changes nothing.
    await server.stop({ keepData: true });
    const before = dumpDatabase(dataDir);
    const missing = `nkmiss${randomBytes(3).toString('hex')}`;
    const broken = await start(
      {
        SCAN_SUBNETS: `${lan.subnet}@${lan.lanInterface},${lan.subnet}@${missing}`,
        SCAN_TOOL: 'arp-scan',
      },
      dataDir,
    );
    const brokenFirst = (await waitForFirstCycle(broken)).lastCycle as CycleSummary;
    assert.equal(brokenFirst.newDevices, 0);
    assert.ok(
      brokenFirst.errors.some((e) => e.includes(missing)),
      brokenFirst.errors.join('; '),
    );
    assert.deepEqual(dumpDatabase(dataDir), before);
    await expectFailedCycle(broken, new RegExp(missing));
    assert.deepEqual(dumpDatabase(dataDir), before);
    await checkAll(broken, history);
  });

  test('nmap -sn, with SCAN_MISSES_BEFORE_ABSENT=2: one miss is forgiven, the second is not', async () => {
    const d = await lan.addHost('h5', { mac: intelMac() });
    const server = await start({
      SCAN_SUBNETS: `${lan.subnet}@${lan.lanInterface}`,
      SCAN_TOOL: 'nmap',
      SCAN_MISSES_BEFORE_ABSENT: '2',
    });
    const history = new History();
    const first = (await waitForFirstCycle(server)).lastCycle as CycleSummary;
    const hosts = [...lan.hosts.values()];
    assert.deepEqual(
      [first.devicesSeen, first.newDevices, first.errors],
      [hosts.length + 1, hosts.length + 1, []],
    );
    history.windows.push(windowOf(first));
    history.newDevice(lan.routerMac, 'router', lan.gateway, '', 'nmap');
    for (const h of hosts)
      history.newDevice(h.mac, h.name, h.ip, h.mac.startsWith('00:1b:21:') ? intelVendor : '', 'nmap');
    await checkAll(server, history);

    await lan.removeHost('h5');
    // First miss: still present, its session open, no event.
    await runCycle(server, history, { devicesSeen: hosts.length, newDevices: 0 });
    await checkAll(server, history);
    // Second miss: gone.
    await runCycle(server, history, { devicesSeen: hosts.length, newDevices: 0 });
    history.gone(d.mac, 'Disconnected');
    await checkAll(server, history);

    // nmap on an interface that is down skips every target and exits 0: still a failed cycle.
    await setLink(lan.lanInterface, 'down');
    try {
      await expectFailedCycle(server, new RegExp(`${lan.lanInterface}.*down`));
    } finally {
      await setLink(lan.lanInterface, 'up');
    }
    await checkAll(server, history);
  });
});

async function setLink(iface: string, state: 'up' | 'down'): Promise<void> {
  const result = spawnSync('/usr/sbin/ip', ['link', 'set', iface, state], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  await waitForOperstate(iface, (operstate) => (state === 'up') === (operstate === 'up'));
}

/** The kernel updates a link's operstate after `ip` returns; the server reads it before each cycle. */
async function waitForOperstate(iface: string, wanted: (operstate: string) => boolean): Promise<void> {
  const read = (): string => readFileSync(`/sys/class/net/${iface}/operstate`, 'utf8').trim();
  assert.ok(await eventually(() => wanted(read())), `${iface} operstate is still ${read()}`);
}

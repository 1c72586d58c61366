import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { mergeSightings, parseArpScan, type Observation } from '../../src/scanner/discovery.js';
import { planCycle } from '../../src/scanner/state-machine.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { ScanStore } from '../helpers/scan-store.js';
import { fixture, tempDb, type TempDb } from './helpers.js';

const h1 = 'b8:27:eb:12:34:56';
const h2 = '00:50:56:aa:bb:01';
const h3 = '52:54:00:01:02:03';
const h4 = '02:42:ac:11:00:07';
const t1 = new Date('2025-03-01T12:00:00Z');
const t2 = new Date('2025-03-01T12:05:00Z');
const t3 = new Date('2025-03-01T12:10:00Z');

function observe(name: string): ReturnType<typeof mergeSightings> {
  return mergeSightings([{ tool: 'arp-scan', sightings: parseArpScan(fixture(name)) }]);
}

function cycle(store: ScanStore, name: string | null, now: Date, grace = 1): void {
  const plan = planCycle({
    known: store.loadState(),
    observations: name === null ? new Map() : observe(name),
    missesBeforeAbsent: grace,
    now,
  });
  store.apply(plan);
}

describe('ScanStore on a real SQLite file: the replayed test-LAN history', () => {
  let handle: TempDb;
  let store: ScanStore;
  before(() => {
    handle = tempDb();
    store = new ScanStore(new SqliteDevices(handle.db));
  });
  after(() => {
    handle.remove();
  });

  const devices = (): unknown[] =>
    handle.db
      .prepare(
        `SELECT devMac, devName, devVendor, devLastIP, devPresentLastScan, devIsNew, devFirstConnection,
                devLastConnection, devSourcePlugin, devScan, devAlertDown, length(devGUID) AS guidLength
         FROM Devices ORDER BY devMac`,
      )
      .all();
  const events = (): unknown[] =>
    handle.db
      .prepare(
        `SELECT eve_MAC, eve_IP, eve_DateTime, eve_EventType, eve_AdditionalInfo, eve_PendingAlertEmail,
                eve_PairEventRowid FROM Events ORDER BY rowid`,
      )
      .raw()
      .all();
  const sessions = (): unknown[] =>
    handle.db.prepare('SELECT rowid, * FROM Sessions ORDER BY rowid').raw().all();

  test('cycle 1: four new devices with catalogue defaults, New Device events, sessions opened at them', () => {
    cycle(store, 'arp-scan.txt', t1);
    const device = (mac: string, ip: string, vendor: string): unknown => ({
      devMac: mac,
      devName: '(unknown)',
      devVendor: vendor,
      devLastIP: ip,
      devPresentLastScan: 1,
      devIsNew: 1,
      devFirstConnection: '2025-03-01 12:00:00',
      devLastConnection: '2025-03-01 12:00:00',
      devSourcePlugin: 'arp-scan',
      devScan: 1,
      devAlertDown: 0,
      guidLength: 36,
    });
    assert.deepEqual(devices(), [
      device(h2, '10.231.77.12', 'VMware, Inc.'),
      device(h4, '10.231.77.14', ''),
      device(h3, '10.231.77.13', 'QEMU'),
      device(h1, '10.231.77.11', 'Raspberry Pi Foundation'),
    ]);
    const ev = (mac: string, ip: string): unknown[] => [
      mac,
      ip,
      '2025-03-01 12:00:00',
      'New Device',
      '',
      1,
      null,
    ];
    assert.deepEqual(events(), [
      ev(h1, '10.231.77.11'),
      ev(h2, '10.231.77.12'),
      ev(h3, '10.231.77.13'),
      ev(h4, '10.231.77.14'),
    ]);
    const open = (rowid: number, mac: string, ip: string): unknown[] => [
      rowid,
      mac,
      ip,
      'New Device',
      '2025-03-01 12:00:00',
      '',
      null,
      1,
      '',
    ];
    assert.deepEqual(sessions(), [
      open(1, h1, '10.231.77.11'),
      open(2, h2, '10.231.77.12'),
      open(3, h3, '10.231.77.13'),
      open(4, h4, '10.231.77.14'),
    ]);
  });

  test('cycle 2: h1 changes IP (session continues), h2 gone (its own session row closed in place)', () => {
    handle.db.prepare('UPDATE Devices SET devAlertDown = 1 WHERE devMac = ?').run(h2);
    cycle(store, 'arp-scan-cycle2.txt', t2);
    assert.deepEqual(events().slice(4), [
      [h1, '10.231.77.21', '2025-03-01 12:05:00', 'IP Changed', 'Previous IP: 10.231.77.11', 1, null],
      [h2, '10.231.77.12', '2025-03-01 12:05:00', 'Device Down', '', 1, null],
    ]);
    assert.deepEqual(sessions(), [
      [1, h1, '10.231.77.11', 'New Device', '2025-03-01 12:00:00', '', null, 1, ''],
      [
        2,
        h2,
        '10.231.77.12',
        'New Device',
        '2025-03-01 12:00:00',
        'Device Down',
        '2025-03-01 12:05:00',
        0,
        '',
      ],
      [3, h3, '10.231.77.13', 'New Device', '2025-03-01 12:00:00', '', null, 1, ''],
      [4, h4, '10.231.77.14', 'New Device', '2025-03-01 12:00:00', '', null, 1, ''],
    ]);
    const row = handle.db
      .prepare('SELECT devPresentLastScan, devLastIP, devLastConnection FROM Devices WHERE devMac = ?')
      .raw();
    assert.deepEqual(row.get(h1), [1, '10.231.77.21', '2025-03-01 12:05:00']);
    assert.deepEqual(row.get(h2), [0, '10.231.77.12', '2025-03-01 12:00:00']);
    // h3 answers for .13 and .50: its IP stays .13, no IP Changed.
    assert.deepEqual(row.get(h3), [1, '10.231.77.13', '2025-03-01 12:05:00']);
  });

  test('after a restart, h2 coming back is a Down Reconnected with a new session row', () => {
    handle.reopen();
    store = new ScanStore(new SqliteDevices(handle.db));
    cycle(store, 'arp-scan.txt', t3);
    assert.deepEqual(
      events()
        .slice(6)
        .map((e) => (e as unknown[]).slice(0, 4)),
      [
        [h1, '10.231.77.11', '2025-03-01 12:10:00', 'IP Changed'],
        [h2, '10.231.77.12', '2025-03-01 12:10:00', 'Down Reconnected'],
      ],
    );
    assert.deepEqual(sessions().at(-1), [
      5,
      h2,
      '10.231.77.12',
      'Down Reconnected',
      '2025-03-01 12:10:00',
      '',
      null,
      1,
      '',
    ]);
    assert.equal(sessions().length, 5);
  });
});

describe('ScanState', () => {
  test('the miss counter survives a reopen, and the grace rule continues from it', () => {
    const handle = tempDb();
    try {
      let store = new ScanStore(new SqliteDevices(handle.db));
      cycle(store, 'arp-scan.txt', t1, 3);
      cycle(store, 'arp-scan-cycle2.txt', t2, 3); // h2 missed once
      cycle(store, 'arp-scan-cycle2.txt', t3, 3); // twice
      assert.equal(store.loadState().get(h2)?.misses, 2);
      handle.reopen();
      store = new ScanStore(new SqliteDevices(handle.db));
      assert.equal(store.loadState().get(h2)?.misses, 2);
      assert.equal(store.loadState().get(h2)?.presentLastScan, true);
      cycle(store, 'arp-scan-cycle2.txt', new Date('2025-03-01T12:15:00Z'), 3); // third miss: gone
      const state = store.loadState().get(h2);
      assert.ok(state);
      assert.equal(state.presentLastScan, false);
      assert.equal(state.lastAbsence, 'Disconnected');
      assert.deepEqual(
        handle.db
          .prepare("SELECT eve_DateTime FROM Events WHERE eve_MAC = ? AND eve_EventType = 'Disconnected'")
          .pluck()
          .all(h2),
        ['2025-03-01 12:15:00'],
      );
    } finally {
      handle.remove();
    }
  });

  test('loadState is one query over Devices LEFT JOIN ScanState (devices created by the API count)', () => {
    const handle = tempDb();
    try {
      handle.db
        .prepare(
          "INSERT INTO Devices (devMac, devLastIP, devPresentLastScan, devScan) VALUES ('00:11:22:33:44:55', '10.0.0.1', 1, 0)",
        )
        .run();
      const store = new ScanStore(new SqliteDevices(handle.db));
      assert.deepEqual(store.loadState().get('00:11:22:33:44:55'), {
        mac: '00:11:22:33:44:55',
        presentLastScan: true,
        alertDown: false,
        alertEvents: false,
        scan: false,
        archived: false,
        lastIP: '10.0.0.1',
        primaryIPv6: '',
        vendor: '',
        misses: 0,
        lastAbsence: null,
        canSleep: false,
        lastConnection: null,
        missesBeforeAbsent: 0,
        flapping: false,
        recentToggles: 0,
      });
    } finally {
      handle.remove();
    }
  });
});

describe('sleeping and flapping on a real SQLite file (DESIGN 13)', () => {
  const mac = '02:00:00:00:0a:01';
  const seen = (ip = '10.0.0.9'): Map<string, Observation> =>
    new Map([[mac, { ips: [ip], vendor: '', source: 'arp-scan' }]]);
  const minute = 60_000;

  test('a sleeping device: present, On-line, devSleeping 1, no event inside SLEEP_MINUTES; gone after', () => {
    const handle = tempDb();
    try {
      const devices = new SqliteDevices(handle.db);
      const store = new ScanStore(devices);
      const t0 = Date.UTC(2025, 2, 1, 12);
      const run = (observations: Map<string, Observation>, at: number): void => {
        store.apply(
          planCycle({
            known: store.loadState(),
            observations,
            missesBeforeAbsent: 1,
            sleepMinutes: 30,
            now: new Date(at),
          }),
        );
      };
      run(seen(), t0);
      handle.db.prepare('UPDATE Devices SET devCanSleep = 1, devAlertDown = 1 WHERE devMac = ?').run(mac);
      const view = (at: number) => devices.get(mac, 'all', new Date(at));
      assert.equal(view(t0)?.devSleeping, 0);
      for (const m of [5, 10, 20, 29]) {
        run(new Map(), t0 + m * minute);
        const v = view(t0 + m * minute);
        assert.deepEqual(
          [v?.devStatus, v?.devSleeping, v?.devPresentLastScan],
          ['On-line', 1, 1],
          `minute ${m}`,
        );
      }
      const list = devices.listDevices({}, { offset: 0, limit: 10 }).items[0];
      assert.deepEqual([list?.devSleeping, list?.devFlapping], [1, 0]);
      // Seen again inside the window: awake, no event at all, the same session.
      run(seen(), t0 + 29 * minute + 30_000);
      assert.equal(view(t0 + 30 * minute)?.devSleeping, 0);
      const types = (): unknown[] =>
        handle.db.prepare('SELECT eve_EventType AS t FROM Events ORDER BY rowid').pluck().all();
      assert.deepEqual(types(), ['New Device']);
      // Unseen for SLEEP_MINUTES since that sighting: Device Down, session closed, no longer sleeping.
      const last = t0 + 29 * minute + 30_000;
      run(new Map(), last + 29 * minute);
      assert.deepEqual(types(), ['New Device']);
      run(new Map(), last + 30 * minute);
      assert.deepEqual(types(), ['New Device', 'Device Down']);
      const v = view(last + 30 * minute);
      assert.deepEqual([v?.devStatus, v?.devSleeping, v?.devSessions], ['Down', 0, 1]);
      assert.equal(
        handle.db.prepare('SELECT COUNT(*) FROM Sessions WHERE ses_StillConnected = 1').pluck().get(),
        0,
      );
    } finally {
      handle.remove();
    }
  });

  test('flapping: counted from stored events in the window, one Flapping event, the flag kept and cleared', () => {
    const handle = tempDb();
    try {
      const devices = new SqliteDevices(handle.db);
      const store = new ScanStore(devices);
      const t0 = Date.UTC(2025, 2, 1, 12);
      const window = 60;
      const run = (present: boolean, at: number): void => {
        store.apply(
          planCycle({
            known: store.loadState(new Date(at - window * minute)),
            observations: present ? seen() : new Map(),
            missesBeforeAbsent: 1,
            flapThreshold: 6,
            flapWindowMinutes: window,
            now: new Date(at),
          }),
        );
      };
      const types = (): unknown[] =>
        handle.db.prepare('SELECT eve_EventType AS t FROM Events ORDER BY rowid').pluck().all();
      const flapping = (at: number): unknown => devices.get(mac, 'all', new Date(at))?.devFlapping;
      run(true, t0);
      // Away and back every 5 minutes: the 6th change within the hour starts the flapping.
      for (let i = 1; i <= 5; i++) {
        run(i % 2 === 0, t0 + i * 5 * minute);
        assert.equal(flapping(t0 + i * 5 * minute), 0, `change ${i}`);
      }
      run(true, t0 + 30 * minute);
      assert.deepEqual(types().slice(-2), ['Connected', 'Flapping']);
      assert.equal(flapping(t0 + 30 * minute), 1);
      assert.equal(
        handle.db
          .prepare("SELECT eve_AdditionalInfo FROM Events WHERE eve_EventType = 'Flapping'")
          .pluck()
          .get(),
        '6 changes within 60 minutes',
      );
      // More changes: still flapping, no second Flapping event.
      run(false, t0 + 35 * minute);
      run(true, t0 + 40 * minute);
      assert.equal(types().filter((t) => t === 'Flapping').length, 1);
      // Quiet for an hour: the window empties and the flag clears (no event for that).
      run(true, t0 + 101 * minute);
      assert.equal(flapping(t0 + 101 * minute), 0);
      assert.equal(types().filter((t) => t === 'Flapping').length, 1);
    } finally {
      handle.remove();
    }
  });
});

describe('pruneHistory', () => {
  test('deletes old events and old closed sessions in batches; keeps open sessions and recent history', async () => {
    const handle = tempDb();
    try {
      const insertEvent = handle.db.prepare(
        "INSERT INTO Events (eve_MAC, eve_DateTime, eve_EventType) VALUES ('00:00:00:00:00:01', ?, 'Connected')",
      );
      const insertSession = handle.db.prepare(
        `INSERT INTO Sessions (ses_MAC, ses_DateTimeConnection, ses_DateTimeDisconnection, ses_StillConnected)
         VALUES ('00:00:00:00:00:01', ?, ?, ?)`,
      );
      for (let day = 1; day <= 20; day++) insertEvent.run(`2024-01-${String(day).padStart(2, '0')} 00:00:00`);
      insertEvent.run('2025-02-27 00:00:00');
      for (let day = 1; day <= 7; day++) {
        const d = `2024-01-${String(day).padStart(2, '0')}`;
        insertSession.run(`${d} 00:00:00`, `${d} 01:00:00`, 0);
      }
      insertSession.run('2024-01-01 00:00:00', null, 1); // open for over a year: kept
      insertSession.run('2025-02-27 00:00:00', '2025-02-27 01:00:00', 0);
      handle.db.prepare("INSERT INTO ScanState (mac, misses) VALUES ('00:00:00:00:00:09', 1)").run();
      const store = new ScanStore(new SqliteDevices(handle.db));
      const result = await store.pruneHistory(30, t1, { batchSize: 3 });
      assert.deepEqual(result, { events: 20, sessions: 7 });
      assert.deepEqual(handle.db.prepare('SELECT eve_DateTime FROM Events').pluck().all(), [
        '2025-02-27 00:00:00',
      ]);
      assert.deepEqual(
        handle.db
          .prepare('SELECT ses_DateTimeConnection, ses_StillConnected FROM Sessions ORDER BY rowid')
          .raw()
          .all(),
        [
          ['2024-01-01 00:00:00', 1],
          ['2025-02-27 00:00:00', 0],
        ],
      );
      assert.equal(
        handle.db.prepare('SELECT count(*) FROM ScanState').pluck().get(),
        0,
        'orphan scan state pruned',
      );
      const plan = (
        handle.db
          .prepare("EXPLAIN QUERY PLAN SELECT rowid FROM Events WHERE eve_DateTime < '2025' LIMIT 3")
          .all() as { detail: string }[]
      )
        .map((r) => r.detail)
        .join(' ');
      assert.match(plan, /USING (COVERING )?INDEX Events_time/);
    } finally {
      handle.remove();
    }
  });
});

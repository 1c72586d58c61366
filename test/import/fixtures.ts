/**
 * Copies of the shared NetAlertX / Pi.Alert fixture databases, filled with realistic rows: MACs in
 * every form the sources hold, rows that are not MACs (`Internet`), history in local time across
 * daylight-saving changes, and values a real database can hold that netkeep refuses.
 */
import { copyFileSync, chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { tempDir } from '../helpers/temp-dirs.js';

/** In the source tree (dist/test/import → test/fixtures/import). */
export const fixturesDir = fileURLToPath(new URL('../../../test/fixtures/import/', import.meta.url));
export const routerGuid = '6f1d6a2e-3c1b-4f7e-9a51-0c2d9e8b7a11';

function copyFixture(name: string): string {
  const dir = tempDir('netkeep-import-src-');
  const path = join(dir, name);
  copyFileSync(join(fixturesDir, name), path);
  chmodSync(path, 0o644); // the shared fixtures are read-only files
  return path;
}

/**
 * NetAlertX app.db with its TIMEZONE setting Europe/Berlin, and the three Devices columns NetAlertX
 * adds when it first runs (devFQDN, devParentRelType, devReqNicsOnline: the shipped file lacks
 * them). Devices: three MAC forms plus one bare, 'Internet', and 'zz:zz'. History includes 02:30 on
 * 2024-03-31 (does not exist in Berlin) and on 2024-10-27 (exists twice).
 */
export function netAlertXCopy(): string {
  const path = copyFixture('netalertx-app.db');
  const db = new Database(path);
  // What NetAlertX's initDB does on its first start (ensure_column).
  for (const column of ['devFQDN TEXT', 'devParentRelType TEXT', 'devReqNicsOnline INTEGER'])
    db.exec(`ALTER TABLE Devices ADD COLUMN ${column}`);
  db.prepare("INSERT INTO Settings (setKey, setValue) VALUES ('TIMEZONE', 'Europe/Berlin')").run();
  const device = db.prepare(`INSERT INTO Devices (devMac, devName, devOwner, devType, devVendor, devFavorite,
      devFirstConnection, devLastConnection, devLastIP, devAlertDown, devSkipRepeated, devLastNotification,
      devPresentLastScan, devIsNew, devIsArchived, devParentMAC, devParentPort, devGUID, devCustomProps)
    VALUES (@mac, @name, '(unknown)', @type, 'Vendor', @fav, @first, '2024-07-01 12:00:00', @ip, @down, @skip,
      @notified, @present, @isNew, @archived, @parent, @port, @guid, @props)`);
  const base = {
    type: '',
    fav: 0,
    first: '2024-01-15 10:00:00',
    ip: '192.168.1.10',
    down: 0,
    skip: 0,
    notified: null,
    present: 0,
    isNew: 0,
    archived: 0,
    parent: '',
    port: null,
    guid: null,
    props: null,
  };
  db.transaction(() => {
    device.run({
      ...base,
      mac: 'AA:BB:CC:00:00:01',
      name: 'Router',
      type: 'Router',
      fav: 1,
      first: '2024-03-31 02:30:00',
      skip: 24,
      present: 1,
      parent: 'Internet',
      guid: routerGuid,
      props: Buffer.from(JSON.stringify([{ name: 'rack', value: 'A1' }])).toString('base64'),
    });
    device.run({
      ...base,
      mac: 'aa-bb-cc-00-00-02',
      name: 'Phone',
      down: 1,
      isNew: 1,
      parent: 'aa:bb:cc:00:00:01',
      port: 3,
    });
    device.run({ ...base, mac: 'aabb.cc00.0003', name: 'Old laptop', archived: 1, guid: 'not-a-uuid' });
    device.run({ ...base, mac: 'aabbcc000004', name: 'TV', present: 1, skip: 99999, notified: 'garbage' });
    device.run({ ...base, mac: 'Internet', name: 'Internet' });
    device.run({ ...base, mac: 'zz:zz', name: 'broken' });
    db.prepare(
      `UPDATE Devices SET devFQDN = 'router.lan', devParentRelType = 'nic', devReqNicsOnline = 1
       WHERE devMac = 'AA:BB:CC:00:00:01'`,
    ).run();
  })();
  const event = db.prepare(
    `INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType, eve_AdditionalInfo, eve_PendingAlertEmail)
     VALUES (?, ?, ?, ?, ?, 1)`,
  );
  db.transaction(() => {
    event.run('AA:BB:CC:00:00:01', '192.168.1.1', '2024-01-15 10:00:00', 'New Device', '');
    event.run('aa:bb:cc:00:00:01', '192.168.1.1', '2024-10-27 02:30:00', 'Connected', '');
    event.run('AA-BB-CC-00-00-02', '192.168.1.20', '2024-07-01 12:00:00', 'Device Down', '');
    event.run('Internet', '203.0.113.7', '2024-07-01 12:00:00', 'IP Changed', '203.0.113.6');
    event.run('aa:bb:cc:00:00:02', '192.168.1.20', 'yesterday', 'Connected', '');
    event.run('aa:bb:cc:99:99:99', '192.168.1.99', '2024-07-01 12:00:00', 'Connected', '');
  })();
  const session = db.prepare(
    `INSERT INTO Sessions (ses_MAC, ses_IP, ses_EventTypeConnection, ses_DateTimeConnection,
       ses_EventTypeDisconnection, ses_DateTimeDisconnection, ses_StillConnected, ses_AdditionalInfo)
     VALUES (?, ?, ?, ?, ?, ?, ?, '')`,
  );
  db.transaction(() => {
    session.run(
      'AA:BB:CC:00:00:01',
      '192.168.1.1',
      'New Device',
      '2024-01-15 10:00:00',
      'Disconnected',
      '2024-01-15 12:00:00',
      0,
    );
    session.run('aabbcc000004', '192.168.1.40', 'Connected', '2024-07-01 08:00:00', null, null, 1);
    session.run(
      'aa:bb:cc:00:00:02',
      '192.168.1.20',
      '<missing event>',
      null,
      'Disconnected',
      '2024-07-02 09:00:00',
      0,
    );
    session.run(
      'aa:bb:cc:00:00:02',
      '192.168.1.20',
      'Connected',
      '2024-13-01 00:00:00',
      'Disconnected',
      null,
      0,
    );
  })();
  db.close();
  return path;
}

/** Pi.Alert's old schema (no Settings table): its 'Internet' row plus two devices and history. */
export function piAlertCopy(): string {
  const path = copyFixture('pialert-app_old.db');
  const db = new Database(path);
  const device = db.prepare(`INSERT INTO Devices (dev_MAC, dev_Name, dev_Owner, dev_DeviceType, dev_Vendor,
      dev_Favorite, dev_FirstConnection, dev_LastConnection, dev_LastIP, dev_ScanCycle, dev_AlertDeviceDown,
      dev_SkipRepeated, dev_PresentLastScan, dev_NewDevice, dev_Archived)
    VALUES (?, ?, 'Ana', ?, 'Synology', ?, '2023-06-01 09:00:00', '2023-06-02 09:00:00', '10.0.0.5', ?, ?, 8, ?, ?, ?)`);
  db.transaction(() => {
    device.run('00:11:32:AA:BB:CC', 'NAS', 'NAS', 1, 1, 1, 0, 0, 0);
    device.run('00-11-32-aa-bb-cd', 'Camera', 'Camera', 0, 0, 0, 0, 1, 1);
  })();
  const event = db.prepare(
    `INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType, eve_AdditionalInfo, eve_PendingAlertEmail)
     VALUES (?, '10.0.0.5', ?, ?, '', 0)`,
  );
  db.transaction(() => {
    event.run('00:11:32:AA:BB:CC', '2023-06-01 09:00:00', 'New Device');
    event.run('00:11:32:AA:BB:CC', '2023-12-01 09:00:00', 'Device Down');
    event.run('Internet', '2023-06-01 09:00:00', 'Internet IP Changed');
  })();
  db.prepare(
    `INSERT INTO Sessions (ses_MAC, ses_IP, ses_EventTypeConnection, ses_DateTimeConnection,
       ses_EventTypeDisconnection, ses_DateTimeDisconnection, ses_StillConnected, ses_AdditionalInfo)
     VALUES ('00:11:32:aa:bb:cc', '10.0.0.5', 'New Device', '2023-06-01 09:00:00', 'Device Down', '2023-12-01 09:00:00', 0, '')`,
  ).run();
  db.close();
  return path;
}

/** Adds `count` Connected/Disconnected events for one MAC to a NetAlertX copy (one statement). */
export function addManyEvents(path: string, mac: string, count: number): void {
  const db = new Database(path);
  db.prepare(
    `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1)
     INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType, eve_AdditionalInfo, eve_PendingAlertEmail)
     SELECT ?, '192.168.1.1', datetime('2023-01-01 00:00:00', '+' || (i * 60) || ' seconds'),
            CASE i % 4 WHEN 0 THEN 'Connected' WHEN 1 THEN 'Disconnected' WHEN 2 THEN 'Device Down'
              ELSE 'IP Changed' END, '', 0 FROM n`,
  ).run(count, mac);
  db.close();
}

/** `count` closed sessions of `mac`, one an hour from 2023-01-01, 30 minutes each. */
export function addManySessions(path: string, mac: string, count: number): void {
  const db = new Database(path);
  db.prepare(
    `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1)
     INSERT INTO Sessions (ses_MAC, ses_IP, ses_EventTypeConnection, ses_DateTimeConnection,
       ses_EventTypeDisconnection, ses_DateTimeDisconnection, ses_StillConnected, ses_AdditionalInfo)
     SELECT ?, '192.168.1.1', 'Connected', datetime('2023-01-01 00:00:00', '+' || i || ' hours'),
            'Disconnected', datetime('2023-01-01 00:30:00', '+' || i || ' hours'), 0, '' FROM n`,
  ).run(count, mac);
  db.close();
}

/**
 * A NetAlertX database as it lies on disk while NetAlertX runs: in WAL mode (NetAlertX opens it with
 * journal_mode=WAL), with rows that are only in `app.db-wal`, not yet checkpointed into app.db. The
 * two files are copied from under an open writer into a directory of their own, `app.db` and
 * `app.db-wal`; returns the path of app.db. The WAL holds the device aa:bb:cc:00:00:05 ('In WAL')
 * and one event of it.
 */
export function netAlertXWalCopy(): string {
  const filled = netAlertXCopy();
  const db = new Database(filled);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0');
    db.prepare(
      `INSERT INTO Devices (devMac, devName, devFirstConnection, devLastConnection, devLastIP)
       VALUES ('AA:BB:CC:00:00:05', 'In WAL', '2024-07-01 12:00:00', '2024-07-01 12:00:00', '192.168.1.50')`,
    ).run();
    db.prepare(
      `INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType, eve_AdditionalInfo, eve_PendingAlertEmail)
       VALUES ('AA:BB:CC:00:00:05', '192.168.1.50', '2024-07-01 12:00:00', 'New Device', '', 1)`,
    ).run();
    const dir = join(filled, '..', 'live');
    mkdirSync(dir);
    copyFileSync(filled, join(dir, 'app.db'));
    copyFileSync(`${filled}-wal`, join(dir, 'app.db-wal'));
    return join(dir, 'app.db');
  } finally {
    db.close();
  }
}

/**
 * A NetAlertX database after a 2026 NetAlertX upgraded it: Events and Sessions columns renamed to
 * camelCase (as its migrate_to_camelcase does, views dropped first) and every time converted to
 * UTC (its setting DB_TIMESTAMPS_UTC_MIGRATED is 1). The rows are netAlertXCopy()'s, their times
 * now meaning UTC.
 */
export function netAlertXCamelCaseCopy(): string {
  const path = netAlertXCopy();
  const db = new Database(path);
  try {
    db.transaction(() => {
      for (const view of [
        'Events_Devices',
        'LatestEventsPerMAC',
        'Sessions_Devices',
        'Convert_Events_to_Sessions',
      ])
        db.exec(`DROP VIEW IF EXISTS ${view}`);
      const renames: Record<string, string[]> = {
        Events: [
          'MAC:Mac',
          'IP:Ip',
          'DateTime',
          'EventType',
          'AdditionalInfo',
          'PendingAlertEmail',
          'PairEventRowid',
        ],
        Sessions: [
          'MAC:Mac',
          'IP:Ip',
          'EventTypeConnection',
          'DateTimeConnection',
          'EventTypeDisconnection',
          'DateTimeDisconnection',
          'StillConnected',
          'AdditionalInfo',
        ],
      };
      for (const [table, columns] of Object.entries(renames)) {
        const prefix = table === 'Events' ? 'eve' : 'ses';
        for (const column of columns) {
          const [old = '', renamed = old] = column.split(':');
          db.exec(`ALTER TABLE ${table} RENAME COLUMN ${prefix}_${old} TO ${prefix}${renamed}`);
        }
      }
      db.prepare("INSERT INTO Settings (setKey, setValue) VALUES ('DB_TIMESTAMPS_UTC_MIGRATED', '1')").run();
    })();
  } finally {
    db.close();
  }
  return path;
}

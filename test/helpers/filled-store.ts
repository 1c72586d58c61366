/**
 * A SQLite store with a row in every table a copy between the stores carries (migrate-store,
 * backup and restore on PostgreSQL), and history enough to copy in many batches.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { openDatabase } from '../../src/db/connection.js';

/** Fills the tables the NetAlertX import leaves empty, and adds history to copy in many batches. */
export function fillStore(path: string): void {
  const db = openDatabase(path);
  try {
    const macs = db.prepare<[], { devMac: string }>('SELECT devMac FROM Devices ORDER BY devMac').all();
    assert.ok(macs.length >= 3, 'the import made devices');
    const [a, b] = macs;
    db.transaction(() => {
      const event = db.prepare(
        "INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType) VALUES (?, '192.168.1.9', ?, ?)",
      );
      const session = db.prepare(
        'INSERT INTO Sessions (ses_MAC, ses_DateTimeConnection, ses_DateTimeDisconnection, ses_StillConnected) VALUES (?, ?, ?, 0)',
      );
      for (let i = 0; i < 1200; i++) {
        const mac = macs[i % macs.length]?.devMac ?? '';
        const day = String(1 + (i % 28)).padStart(2, '0');
        const hour = String(i % 24).padStart(2, '0');
        event.run(mac, `2024-05-${day} ${hour}:00:00`, i % 3 === 0 ? 'Device Down' : 'Connected');
        session.run(mac, `2024-05-${day} ${hour}:00:00`, `2024-05-${day} ${hour}:30:00`);
      }
      db.prepare("INSERT INTO ScanState (mac, misses, lastAbsence) VALUES (?, 2, 'Device Down')").run(
        a?.devMac,
      );
      db.prepare(
        "INSERT INTO DeviceMacs (dma_MAC, dma_DevMac, dma_FirstSeen, dma_LastSeen, dma_Reason) VALUES ('02:11:22:33:44:55', ?, '2024-05-01 10:00:00', '2024-05-02 10:00:00', 'merge')",
      ).run(b?.devMac);
      db.prepare(
        "INSERT INTO DevicePorts VALUES (?, 22, 'tcp', 'ssh', 'OpenSSH', '9.2', '2024-05-01 10:00:00', '2024-05-02 10:00:00')",
      ).run(a?.devMac);
      db.prepare("INSERT INTO WatchMemory VALUES ('gateway', '192.168.1.1', 'aa:bb:cc:dd:ee:ff')").run();
      const payload = db
        .prepare(
          'INSERT INTO NotificationPayloads (events, eventCount, preview) VALUES (\'[{"a":1}]\', 1, \'[{"a":1}]\')',
        )
        .run().lastInsertRowid;
      db.prepare(
        "INSERT INTO Notifications (deliveryId, channel, status, attempts, createdAt, nextAttemptAt, payloadId) VALUES ('d-1', 'webhook', 'pending', 1, '2024-05-01 10:00:00', 1714557600000, ?)",
      ).run(payload);
      // A probe (its token hash a BLOB) and one of its cycles.
      db.prepare(
        "INSERT INTO Probes (prb_Id, prb_Name, prb_Site, prb_TokenHash, prb_CreatedAt, prb_Subnets, prb_Status) VALUES ('11111111-1111-4111-8111-111111111111', 'branch', 'branch', ?, '2024-05-01 10:00:00', '[\"10.1.0.0/24\"]', 'online')",
      ).run(createHash('sha256').update('secret').digest());
      db.prepare(
        "INSERT INTO ProbeCycles VALUES ('11111111-1111-4111-8111-111111111111', '00000000-0000-4000-8000-000000000001', '2024-05-01 10:05:00')",
      ).run();
    })();
    // A gap in the rowids, as retention leaves one.
    db.prepare('DELETE FROM Events WHERE rowid % 97 = 0').run();
  } finally {
    db.close();
  }
}

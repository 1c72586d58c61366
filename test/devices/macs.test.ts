/**
 * One device, many MACs (docs/random-macs.md) through the real app on each store (stores.ts):
 * devRandomMac and `?random=`, merge and split, a device found by any of its MACs, aliases absent
 * from lists and totals, the /stream changes, and concurrent merges that never half-merge.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { InProcessServer } from '../helpers/inject.js';
import { openTables, type StoreTables } from '../helpers/store-tables.js';
import { onEachStore } from '../helpers/stores.js';

type Db = StoreTables;

/** Every row of the device tables and the non-empty kept counts, for "nothing changed". */
async function everything(db: Db): Promise<string> {
  return JSON.stringify([
    await db.dump(),
    await db.all(
      'SELECT * FROM "DeviceHistoryTotals" WHERE "events" <> 0 OR "downAlerts" <> 0 OR "sessions" <> 0 OR "closedSeconds" <> 0 OR "irregular" <> 0 ORDER BY "mac"',
    ),
    await db.all(
      'SELECT * FROM "DeviceHistoryBuckets" WHERE "events" <> 0 OR "downAlerts" <> 0 OR "ended" <> 0 OR "started" <> 0 ORDER BY "mac", "span", "bucket"',
    ),
    await db.all('SELECT * FROM "DeviceMacs" ORDER BY "dma_MAC"'),
  ]);
}

let counter = 0;
/** A fresh MAC; `random` sets the locally administered bit. */
function newMac(random: boolean): string {
  counter += 1;
  const hex = counter.toString(16).padStart(6, '0');
  return `${random ? '06' : '00'}:11:22:${hex.slice(0, 2)}:${hex.slice(2, 4)}:${hex.slice(4, 6)}`;
}

const hour = 3_600_000;

onEachStore('several MACs per device', (_store, start) => {
  let server: InProcessServer;
  let db: Db;
  const changes: { mac: string; change: string }[] = [];

  before(async () => {
    server = await start();
    db = await openTables(server);
    server.server.feed.subscribe('device', (c) => changes.push({ mac: c.mac, change: c.change }));
  });
  after(async () => {
    await db.close();
    await server.stop();
  });

  async function create(mac: string, fields: Record<string, unknown> = {}): Promise<void> {
    const res = await server.request('POST', `/device/${mac}`, { body: { createNew: true, ...fields } });
    assert.equal(res.status, 200, res.text);
  }
  async function get(mac: string): Promise<Record<string, unknown>> {
    const res = await server.request('GET', `/device/${mac}`);
    assert.equal(res.status, 200, res.text);
    return res.json;
  }
  const merge = (to: string, from: string) =>
    server.request('POST', `/device/${to}/merge`, { body: { from } });
  const split = (mac: string, alias: string) =>
    server.request('POST', `/device/${mac}/split`, { body: { mac: alias } });

  test('devRandomMac follows the locally administered bit; ?random= filters the list', async () => {
    const random = newMac(true);
    const fixed = newMac(false);
    await create(random);
    await create(fixed);
    assert.equal((await get(random)).devRandomMac, 1);
    assert.equal((await get(fixed)).devRandomMac, 0);
    assert.deepEqual((await get(fixed)).devMacs, [fixed]);
    const ones = (await server.request('GET', '/devices?random=1')).json.devices as Record<string, unknown>[];
    const zeros = (await server.request('GET', '/devices?random=0')).json.devices as Record<
      string,
      unknown
    >[];
    assert.ok(ones.some((d) => d.devMac === random) && !ones.some((d) => d.devMac === fixed));
    assert.ok(zeros.some((d) => d.devMac === fixed) && !zeros.some((d) => d.devMac === random));
    assert.ok(ones.every((d) => d.devRandomMac === 1) && zeros.every((d) => d.devRandomMac === 0));
    const bad = await server.request('GET', '/devices?random=yes');
    assert.equal(bad.status, 400, bad.text);
  });

  test('merge: aliases, history and counts follow, empty fields filled, from gone, found by any MAC', async () => {
    const to = newMac(false);
    const from = newMac(true);
    await create(to, { devName: 'Laptop', devOwner: '' });
    await create(from, { devName: 'phone-x', devOwner: 'Ann', devLocation: 'Kitchen' });
    const t0 = Date.UTC(2026, 0, 10, 12);
    await db.seedHistory(to, {
      events: [{ at: t0 - 30 * hour, type: 'Device Down' }],
      sessions: [{ from: t0 - 40 * hour, to: t0 - 39 * hour }],
    });
    await db.seedHistory(from, {
      events: [
        { at: t0 - 20 * hour, type: 'IP Changed' },
        { at: t0 - 10 * hour, type: 'Device Down' },
      ],
      sessions: [
        { from: t0 - 20 * hour, to: t0 - 18 * hour },
        { from: t0 - 2 * hour, to: null },
      ],
    });
    const totalBefore = (await server.request('GET', '/devices')).json.total as number;
    changes.length = 0;

    const res = await merge(to, from);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, { success: true, devMac: to, devMacs: [to, from] });
    assert.deepEqual(changes, [
      { mac: from, change: 'deleted' },
      { mac: to, change: 'updated' },
    ]);

    const device = await get(to);
    assert.equal(device.devName, 'Laptop', "the target's non-empty name wins");
    assert.equal(device.devOwner, 'Ann', "an empty field takes from's value");
    assert.equal(device.devLocation, 'Kitchen');
    assert.deepEqual(device.devMacs, [to, from]);
    assert.equal(device.devSessions, 3);
    assert.equal(device.devEvents, 3);
    assert.equal(device.devDownAlerts, 2);
    // Every /device/<mac> path finds the device by its alias.
    assert.deepEqual(await get(from), device);
    const events = await server.request('GET', `/device/${from}/events`);
    assert.equal(events.status, 200);
    assert.equal(events.json.total, 3);
    const sessions = await server.request('GET', `/device/${from}/sessions`);
    assert.equal(sessions.json.total, 3);
    // The alias is no device of its own: not listed, not counted.
    const list = await server.request('GET', '/devices');
    assert.equal(list.json.total, totalBefore - 1);
    assert.ok(!(list.json.devices as Record<string, unknown>[]).some((d) => d.devMac === from));
    const totals = await server.request('GET', '/devices/totals');
    assert.equal(totals.status, 200);
    // The kept counts equal a recount of the moved rows.
    const recount = await db.value(
      `SELECT COUNT(*) FILTER (WHERE "eve_EventType" NOT IN ('Connected','Disconnected')) FROM "Events" WHERE "eve_MAC" = ?`,
      [to],
    );
    assert.equal(recount, 3);
    assert.equal(await db.value('SELECT COUNT(*) FROM "Events" WHERE "eve_MAC" = ?', [from]), 0);
    // An alias cannot be created as a device of its own.
    const again = await server.request('POST', `/device/${from}`, { body: { createNew: true } });
    assert.equal(again.status, 409, again.text);
    // Writes through the alias change the device.
    const edit = await server.request('POST', `/device/${from}`, { body: { devComments: 'via alias' } });
    assert.equal(edit.status, 200, edit.text);
    assert.equal((await get(to)).devComments, 'via alias');
    // update-column too (both resolve the alias inside their write: updateResolved).
    const column = await server.request('POST', `/device/${from}/update-column`, {
      body: { columnName: 'devOwner', columnValue: 'Bob' },
    });
    assert.equal(column.status, 200, column.text);
    assert.equal((await get(to)).devOwner, 'Bob');
    assert.equal((await get(from)).devOwner, 'Bob', 'the alias answers the changed device');
    const unknown = await server.request('POST', `/device/${newMac(false)}/update-column`, {
      body: { columnName: 'devOwner', columnValue: 'Bob' },
    });
    assert.equal(unknown.status, 404, unknown.text);
  });

  test('merge: 404 when either is missing, 400 same device or into its own alias, 409 already merged; nothing changes', async () => {
    const a = newMac(true);
    const b = newMac(true);
    const c = newMac(true);
    const missing = newMac(true);
    await create(a);
    await create(b);
    await create(c);
    assert.equal((await merge(b, a)).status, 200);
    const before = await everything(db);
    const cases: [string, string, number, string][] = [
      [missing, b, 404, 'DEVICE_NOT_FOUND'],
      [b, missing, 404, 'DEVICE_NOT_FOUND'],
      [b, b, 400, 'SAME_DEVICE'],
      [a, b, 400, 'SAME_DEVICE'], // b into its own alias
      [b, a, 409, 'ALREADY_MERGED'],
      [c, a, 409, 'ALREADY_MERGED'], // a chain through an alias is refused
    ];
    for (const [to, from, status, code] of cases) {
      const res = await merge(to, from);
      assert.equal(res.status, status, `${to} <- ${from}: ${res.text}`);
      assert.equal(res.json.code, code);
    }
    const bad = await server.request('POST', `/device/${b}/merge`, { body: { from: 'nope' } });
    assert.equal(bad.status, 400);
    assert.equal(await everything(db), before);
    // A chain: B (with alias A) into C: every MAC ends on C.
    const res = await merge(c, b);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json.devMacs, [c, ...[a, b].sort()]);
    assert.equal((await get(a)).devMac, c);
  });

  test('split: the alias is a device of its own with no history; the history stays', async () => {
    const to = newMac(false);
    const from = newMac(true);
    await create(to);
    await create(from);
    await db.seedHistory(from, { events: [{ at: Date.UTC(2026, 0, 1), type: 'IP Changed' }], sessions: [] });
    assert.equal((await merge(to, from)).status, 200);
    // Answered by alias first (the answer cache keeps which device the alias belongs to).
    assert.equal((await get(from)).devMac, to);
    changes.length = 0;
    const res = await split(from, from);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, { success: true, devMac: to, devMacs: [to] });
    assert.deepEqual(changes, [
      { mac: from, change: 'created' },
      { mac: to, change: 'updated' },
    ]);
    const alone = await get(from);
    assert.deepEqual(alone.devMacs, [from]);
    assert.equal(alone.devEvents, 0);
    assert.equal((await get(to)).devEvents, 1);
    const notAlias = await split(to, to);
    assert.equal(notAlias.status, 400, notAlias.text);
    assert.equal((await split(newMac(true), from)).status, 404);
    assert.equal((await split(to, from)).status, 400, 'no longer an alias');
  });

  test('delete removes the aliases with the device', async () => {
    const to = newMac(false);
    const from = newMac(true);
    await create(to);
    await create(from);
    assert.equal((await merge(to, from)).status, 200);
    assert.equal((await get(from)).devMac, to);
    assert.equal((await server.request('DELETE', `/device/${from}/delete`)).status, 200, 'by alias');
    assert.equal((await server.request('GET', `/device/${to}`)).status, 404);
    assert.equal((await server.request('GET', `/device/${from}`)).status, 404);
    assert.equal(await db.value('SELECT COUNT(*) FROM "DeviceMacs" WHERE "dma_DevMac" = ?', [to]), 0);
    await create(from); // a device again
  });

  test('concurrent merges of the same devices: one 200, the rest 404/409, never half-merged', async () => {
    for (let round = 0; round < 5; round++) {
      const a = newMac(true);
      const b = newMac(true);
      const c = newMac(true);
      for (const m of [a, b, c]) await create(m);
      await db.seedHistory(a, { events: [{ at: Date.UTC(2026, 0, 2), type: 'Device Down' }], sessions: [] });
      const answers = await Promise.all([merge(b, a), merge(c, a), merge(b, a), merge(c, a)]);
      const statuses = answers.map((r) => r.status).sort();
      assert.equal(statuses.filter((s) => s === 200).length, 1, JSON.stringify(statuses));
      assert.ok(
        statuses.every((s) => s === 200 || s === 404 || s === 409),
        JSON.stringify(statuses),
      );
      const winner = answers.find((r) => r.status === 200)?.json.devMac as string;
      assert.deepEqual((await get(a)).devMacs, [winner, a]);
      assert.equal((await get(winner)).devDownAlerts, 1);
      const other = winner === b ? c : b;
      assert.deepEqual((await get(other)).devMacs, [other]);
      assert.equal((await get(other)).devDownAlerts, 0);
    }
  });
});

/**
 * Single-device updates (update-column, a POST that sets fields) done together: the writes of a
 * group (group-commit.ts) that set the same columns become one UPDATE over a JSON array, so a
 * group of 32 writes is one statement, one round trip and one firing of the change triggers.
 * Writes that set devParentMAC (a loop check first) or devName (its source is marked) are done
 * one by one (device-writes.ts). Two writes to one device in a group: the later one wins, as if
 * they had run in turn.
 */
import type pg from 'pg';
import type { DeviceChanges } from '../devices.js';
import { toColumns } from '../sqlite/devices.js';
import type { Combinable } from './group-commit.js';

interface Item {
  readonly mac: string;
  readonly row: Record<string, unknown>;
}

/** How `update(mac, changes)` combines with the others of its kind; undefined: it does not. */
export function combinableUpdate(mac: string, changes: DeviceChanges): Combinable | undefined {
  if (Object.hasOwn(changes, 'devParentMAC') || Object.hasOwn(changes, 'devName')) return undefined;
  let row: Record<string, unknown>;
  try {
    row = toColumns(changes);
  } catch {
    return undefined; // a field outside the catalogue: the write alone refuses it
  }
  const names = Object.keys(row).sort();
  if (names.length === 0) return undefined;
  return { key: `update:${names.join(',')}`, item: { mac, row } satisfies Item, runAll: updateAll };
}

/** One UPDATE for all: whether each item's device exists. */
async function updateAll(client: pg.PoolClient, items: readonly unknown[]): Promise<boolean[]> {
  const list = items as readonly Item[];
  // The last write of each device (json_populate_recordset types each value as its column).
  const last = new Map<string, Record<string, unknown>>();
  for (const { mac, row } of list) last.set(mac, { ...row, devMac: mac });
  // Column names come from the catalogue only (toColumns refused any other).
  const names = Object.keys(list[0]?.row ?? {});
  const set = names.map((name) => `"${name}" = v."${name}"`).join(', ');
  const updated = await client.query<{ devMac: string }>(
    `UPDATE "Devices" AS d SET ${set}
     FROM json_populate_recordset(NULL::"Devices", $1::json) AS v WHERE d."devMac" = v."devMac"
     RETURNING d."devMac"`,
    [JSON.stringify([...last.values()])],
  );
  const found = new Set(updated.rows.map((r) => r.devMac));
  return list.map((item) => found.has(item.mac));
}

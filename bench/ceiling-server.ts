/**
 * The ceiling for GET /device/<mac>: a bare node:http server answering the same device JSON from
 * memory (serialised once at start). Run as its own process so it never shares an event loop with
 * the load generator. Env: PORT, HOST, DATA_DIR (the seeded database to read the devices from).
 *
 * It also answers, from memory, the same bytes netkeep answers for `GET /devices/totals`, the
 * whole list `GET /devices` and the pages of `ceilingPages` (bench/devices.ts checks the bytes are
 * equal before it measures).
 *
 * It also takes any POST the least a server can: it reads the body, parses it as JSON and answers
 * `{"success":true}` (400 for a body that is not JSON), so that the mixed case (GETs with writes
 * beside them) has a ceiling under the same load: what receiving the POSTs costs Node itself.
 */
import { createServer } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { rowToJson, type DeviceRow } from '../src/devices/catalogue.js';
import { deviceListStatements } from '../src/store/sqlite/device-sql.js';
import { deviceGroups, deviceStatus, totalsArray, type DeviceGroup } from '../src/devices/status.js';
import { deviceTotalsSql } from '../src/store/sqlite/status-sql.js';
import { registerListFunctions } from '../src/store/sqlite/list-sql.js';
import { isRandomMac } from '../src/validation.js';
import { ceilingPages } from './ceiling-pages.js';

const db = new Database(join(process.env.DATA_DIR ?? '.', 'netkeep.db'), { readonly: true });
registerListFunctions(db);
const devices = new Map<string, string>();
for (const row of db.prepare('SELECT * FROM Devices').all() as DeviceRow[]) {
  devices.set(
    String(row.devMac),
    JSON.stringify({
      ...rowToJson(row),
      devStatus: deviceStatus(Number(row.devPresentLastScan), Number(row.devAlertDown)),
      devSessions: 20,
      devEvents: 60,
      devDownAlerts: 10,
      devPresenceHours: 1234.56,
      devChildrenDynamic: [],
      devChildrenNicsDynamic: [],
    }),
  );
}
const noTotals = Object.fromEntries(deviceGroups.map((group) => [group, 0])) as Record<DeviceGroup, number>;
/** Answers other than a device's, by path and query as the bench asks them. */
const answers = new Map<string, Buffer>();
// The list item netkeep answers: the row, devStatus, the presence flags (read by the list's own
// statements) and devRandomMac.
const listItem = (row: DeviceRow): string =>
  JSON.stringify({
    ...rowToJson(row),
    devStatus: deviceStatus(Number(row.devPresentLastScan), Number(row.devAlertDown)),
    devSleeping: row.devSleeping === 1 ? 1 : 0,
    devFlapping: row.devFlapping === 1 ? 1 : 0,
    devRandomMac: isRandomMac(String(row.devMac)) ? 1 : 0,
  });
answers.set(
  '/devices/totals',
  Buffer.from(
    JSON.stringify(
      totalsArray(db.prepare<[], Record<DeviceGroup, number>>(deviceTotalsSql).get() ?? noTotals),
    ),
  ),
);
const all = (db.prepare(deviceListStatements({}).page).all({ limit: -1, offset: 0 }) as DeviceRow[]).map(
  listItem,
);
answers.set(
  '/devices',
  Buffer.from(`{"success":true,"devices":[${all.join(',')}],"total":${all.length},"offset":0,"limit":null}`),
);
for (const { path, query, offset, limit } of ceilingPages(all.length)) {
  const page = (db.prepare(deviceListStatements(query).page).all({ limit, offset }) as DeviceRow[]).map(
    listItem,
  );
  const total = db.prepare(deviceListStatements(query).total).pluck().get() as number;
  answers.set(
    path,
    Buffer.from(
      `{"success":true,"devices":[${page.join(',')}],"total":${total},"offset":${offset},"limit":${limit}}`,
    ),
  );
}
db.close();

const server = createServer((request, response) => {
  if (request.method === 'POST') {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      text += chunk;
    });
    request.on('end', () => {
      let parsed = true;
      try {
        JSON.parse(text);
      } catch {
        parsed = false;
      }
      response.writeHead(parsed ? 200 : 400, { 'content-type': 'application/json; charset=utf-8' });
      response.end(`{"success":${String(parsed)}}`);
    });
    return;
  }
  const url = request.url ?? '/';
  if (url === '/health') {
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    response.end('{"status":"ok"}');
    return;
  }
  const answer = answers.get(url);
  if (answer !== undefined) {
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    response.end(answer);
    return;
  }
  const mac = decodeURIComponent(url.slice('/device/'.length).split('?', 1)[0] ?? '');
  const body = devices.get(mac);
  if (body === undefined) {
    response.writeHead(404, { 'content-type': 'application/json; charset=utf-8' });
    response.end('{"success":false}');
    return;
  }
  response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
  response.end(body);
});
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
});

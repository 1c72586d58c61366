/**
 * The ceiling for GET /device/<mac>: a bare node:http server answering the same device JSON from
 * memory (serialised once at start). Run as its own process so it never shares an event loop with
 * the load generator. Env: PORT, HOST, DATA_DIR (the seeded database to read the devices from).
 *
 * It also takes any POST the least a server can: it reads the body, parses it as JSON and answers
 * `{"success":true}` (400 for a body that is not JSON), so that the mixed case (GETs with writes
 * beside them) has a ceiling under the same load: what receiving the POSTs costs Node itself.
 */
import { createServer } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { rowToJson, type DeviceRow } from '../src/devices/catalogue.js';
import { deviceStatus } from '../src/devices/status.js';

const db = new Database(join(process.env.DATA_DIR ?? '.', 'netkeep.db'), { readonly: true });
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

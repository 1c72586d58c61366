/**
 * /mcp driven by the MCP SDK's own client over real HTTP (the in-process app listening on
 * 127.0.0.1): initialize, tools/list (the tools and their input schemas are the routes'), tools/call
 * changing what the REST API then shows, arguments failing a route's schema answered with that
 * route's own 400 reason, get_open_ports answering the ports stored through the watch store as
 * POST /device/open_ports does, a wrong token refused. Wake-on-LAN goes to a loopback UDP listener and
 * nmap scans 127.0.0.1 only.
 */
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import Database from 'better-sqlite3';
import { sqliteStore } from '../../src/store/sqlite/store.js';
import { toolOperations } from '../../src/mcp/tools.js';
import { InProcessServer } from '../helpers/inject.js';
import type { TestResponse } from '../helpers/server.js';

type Json = Record<string, unknown>;

interface ToolResult {
  readonly isError?: boolean;
  readonly content: readonly { type: string; text?: string }[];
}

/** The JSON text of a tool result's one text item. */
function resultJson(result: unknown): { isError: boolean; body: unknown } {
  const { isError, content } = result as ToolResult;
  assert.equal(content.length, 1);
  const [item] = content;
  assert.ok(item);
  assert.equal(item.type, 'text');
  return { isError: isError === true, body: JSON.parse(item.text ?? '') as unknown };
}

describe('MCP at /mcp (the SDK client over HTTP)', () => {
  let app: InProcessServer;
  let url: URL;
  let client: Client;
  let wol: Socket;
  const wolPackets: Buffer[] = [];

  const connect = async (token: string): Promise<Client> => {
    const c = new Client({ name: 'netkeep-test', version: '1.0.0' });
    await c.connect(
      new StreamableHTTPClientTransport(url, {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    return c;
  };

  before(async () => {
    wol = createSocket('udp4');
    wol.on('message', (message) => wolPackets.push(message));
    await new Promise<void>((resolve) => wol.bind(0, '0.0.0.0', resolve));
    app = await InProcessServer.start({ WOL_PORT: String(wol.address().port) });
    await app.server.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.app.server.address() as AddressInfo;
    url = new URL(`http://127.0.0.1:${port}/mcp`);
    for (const [mac, devName] of [
      ['aa:00:00:00:00:01', 'Router'],
      ['aa:00:00:00:00:02', 'Printer'],
    ]) {
      const res = await app.request('POST', `/device/${mac}`, { body: { createNew: true, devName } });
      assert.equal(res.status, 200, res.text);
    }
    client = await connect(app.token);
  });
  after(async () => {
    await client.close();
    await app.stop();
    wol.close();
  });

  test('initialize: the server names itself and offers tools', () => {
    assert.equal(client.getServerVersion()?.name, 'netkeep');
    assert.ok(client.getServerCapabilities()?.tools);
  });

  test("tools/list: every tool of the table, with its route's summary and schema", async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      toolOperations.map((t) => t.name),
    );
    const byName = new Map(tools.map((t) => [t.name, t]));
    const spec = (await app.request('GET', '/openapi.json', { token: null })).json as {
      paths: Record<string, Record<string, { summary: string }>>;
    };
    for (const { name, method, path } of toolOperations)
      assert.ok(
        byName.get(name)?.description?.startsWith(spec.paths[path]?.[method.toLowerCase()]?.summary ?? '?'),
        name,
      );
    const search = byName.get('search_devices')?.inputSchema as Json;
    assert.deepEqual(search.required, ['query']);
    assert.deepEqual((search.properties as Record<string, Json>).query?.maxLength, 256);
    const alias = byName.get('set_device_alias')?.inputSchema as Json;
    assert.deepEqual([...(alias.required as string[])].sort(), ['alias', 'mac']);
    assert.ok(((alias.properties as Record<string, Json>).mac?.pattern as string).length > 0);
    const info = byName.get('get_device_info')?.inputSchema as Json;
    assert.deepEqual(Object.keys(info.properties as Json).sort(), ['mac', 'period']);
    const nmap = byName.get('run_nmap_scan')?.inputSchema as Json;
    const ports = byName.get('get_open_ports')?.inputSchema as Json;
    assert.deepEqual(ports.required, ['target']);
    assert.equal((ports.properties as Record<string, Json>).target?.maxLength, 64);
    assert.deepEqual((nmap.properties as Record<string, Json>).mode?.enum, [
      'fast',
      'normal',
      'detail',
      'skipdiscovery',
    ]);
  });

  test('tools/call changes the data the REST API shows, and reads what it wrote', async () => {
    const set = resultJson(
      await client.callTool({
        name: 'set_device_alias',
        arguments: { mac: 'AA-00-00-00-00-02', alias: 'Laser' },
      }),
    );
    assert.deepEqual(set, {
      isError: false,
      body: { success: true, message: 'Alias of aa:00:00:00:00:02 set' },
    });
    assert.equal((await app.request('GET', '/device/aa:00:00:00:00:02')).json.devName, 'Laser');

    const found = resultJson(
      await client.callTool({ name: 'search_devices', arguments: { query: 'laser' } }),
    );
    assert.equal(found.isError, false);
    assert.deepEqual(
      ((found.body as Json).devices as Json[]).map((d) => [d.devMac, d.devName]),
      [['aa:00:00:00:00:02', 'Laser']],
    );
    const info = resultJson(
      await client.callTool({
        name: 'get_device_info',
        arguments: { mac: 'aa:00:00:00:00:02', period: '7 days' },
      }),
    );
    assert.equal((info.body as Json).devName, 'Laser');
    const rest = await app.request('POST', '/devices/by-status', { body: { status: 'my' } });
    const listed = resultJson(await client.callTool({ name: 'list_devices', arguments: { status: 'my' } }));
    assert.deepEqual(listed.body, rest.body);
    const topology = resultJson(await client.callTool({ name: 'get_network_topology', arguments: {} }));
    assert.equal(((topology.body as Json).nodes as Json[]).length, 2);
    const latest = resultJson(await client.callTool({ name: 'get_latest_device' }));
    assert.equal((latest.body as Json[]).length, 1);
    for (const name of ['get_recent_alerts', 'get_last_events']) {
      const events = resultJson(await client.callTool({ name, arguments: {} }));
      assert.deepEqual([events.isError, (events.body as Json).success], [false, true], name);
    }
  });

  test("arguments failing the route's schema get the route's own 400 reason", async () => {
    const cases: [string, Json, string, string, unknown][] = [
      ['search_devices', { query: 5 }, 'POST', '/devices/search', { query: 5 }],
      ['search_devices', {}, 'POST', '/devices/search', {}],
      ['search_devices', { query: 'x'.repeat(300) }, 'POST', '/devices/search', { query: 'x'.repeat(300) }],
      ['search_devices', { query: 'a', bogus: true }, 'POST', '/devices/search', { query: 'a', bogus: true }],
      [
        'set_device_alias',
        { mac: 'aa:00:00:00:00:01', alias: 7 },
        'POST',
        '/device/aa:00:00:00:00:01/set-alias',
        { alias: 7 },
      ],
      ['set_device_alias', { mac: 'nope', alias: 'x' }, 'POST', '/device/nope/set-alias', { alias: 'x' }],
      ['get_device_info', { mac: 'nope' }, 'GET', '/device/nope', undefined],
      [
        'get_device_info',
        { mac: 'aa:00:00:00:00:01', period: 'forever' },
        'GET',
        '/device/aa:00:00:00:00:01?period=forever',
        undefined,
      ],
      ['list_devices', { status: 'On-line' }, 'POST', '/devices/by-status', { status: 'On-line' }],
      ['get_recent_alerts', { hours: 0 }, 'POST', '/events/recent', { hours: 0 }],
      ['wol_wake_device', { devMac: 'zz' }, 'POST', '/nettools/wakeonlan', { devMac: 'zz' }],
      ['get_open_ports', {}, 'POST', '/device/open_ports', {}],
      ['get_open_ports', { target: 5 }, 'POST', '/device/open_ports', { target: 5 }],
      [
        'get_open_ports',
        { target: '--script=http-title' },
        'POST',
        '/device/open_ports',
        { target: '--script=http-title' },
      ],
      ['get_open_ports', { target: '1.2.3' }, 'POST', '/device/open_ports', { target: '1.2.3' }],
      [
        'get_open_ports',
        { target: 'a'.repeat(10_000) },
        'POST',
        '/device/open_ports',
        { target: 'a'.repeat(10_000) },
      ],
      [
        'get_open_ports',
        { target: '10.0.0.1', scan: true },
        'POST',
        '/device/open_ports',
        { target: '10.0.0.1', scan: true },
      ],
      [
        'run_nmap_scan',
        { scan: '127.0.0.1', mode: '-sS' },
        'POST',
        '/nettools/nmap',
        { scan: '127.0.0.1', mode: '-sS' },
      ],
      [
        'run_nmap_scan',
        { scan: '127.0.0.1; rm -rf /', mode: 'fast' },
        'POST',
        '/nettools/nmap',
        { scan: '127.0.0.1; rm -rf /', mode: 'fast' },
      ],
    ];
    for (const [name, args, method, path, body] of cases) {
      const result = resultJson(await client.callTool({ name, arguments: args }));
      const rest = await app.request(method, path, body === undefined ? {} : { body });
      assert.equal(rest.status, 400, `${method} ${path}: ${rest.text}`);
      assert.deepEqual(result, { isError: true, body: rest.body }, name);
    }
    // What cannot make a request at all is said in the same words.
    const noMac = resultJson(await client.callTool({ name: 'set_device_alias', arguments: { alias: 'x' } }));
    assert.deepEqual(
      [noMac.isError, (noMac.body as Json).message],
      [true, "Invalid arguments: field 'mac' is required"],
    );
    const numberMac = resultJson(await client.callTool({ name: 'get_device_info', arguments: { mac: 5 } }));
    assert.equal((numberMac.body as Json).message, "Invalid arguments: field 'mac' must be string");
    const extra = resultJson(await client.callTool({ name: 'get_latest_device', arguments: { n: '1' } }));
    assert.equal((extra.body as Json).message, "Invalid arguments: unknown field 'n'");
    const unknown = resultJson(await client.callTool({ name: 'drop_tables', arguments: {} }));
    assert.deepEqual([unknown.isError, (unknown.body as Json).code], [true, 'UNKNOWN_TOOL']);
    // Nothing was changed by any of them.
    assert.equal((await app.request('GET', '/device/aa:00:00:00:00:01')).json.devName, 'Router');
  });

  test("search_devices answers the route's own bytes, without a second request to the route", async () => {
    // search_devices is a direct route (src/http/direct-routes.ts): the route's one function, called
    // without app.inject, so the route's request count does not move; its answers, errors included,
    // are the route's bytes.
    const searches = async (): Promise<number> => {
      const metrics = await app.request('GET', '/metrics');
      const lines = metrics.text.split('\n').filter((line) => line.includes('route="/devices/search"'));
      return lines
        .filter((line) => line.startsWith('netkeep_http_requests_total'))
        .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
    };
    const cases: Json[] = [
      { query: 'router' },
      { query: 'AA:00:00:00:00:02' },
      { query: 'aa', limit: 1 },
      { query: 'no such device' },
      { query: '   ' },
      { query: 'aa', limit: 0 },
    ];
    const rest: TestResponse[] = [];
    for (const args of cases) rest.push(await app.request('POST', '/devices/search', { body: args }));
    const before = await searches();
    for (const [i, args] of cases.entries()) {
      const result = (await client.callTool({ name: 'search_devices', arguments: args })) as ToolResult;
      const answer = rest[i];
      assert.ok(answer);
      assert.deepEqual(
        [result.isError === true, result.content[0]?.text],
        [answer.status >= 400, answer.text],
        JSON.stringify(args),
      );
    }
    assert.deepEqual(
      rest.map((r) => r.status),
      [200, 200, 200, 404, 400, 400],
    );
    assert.equal(await searches(), before, 'no request went to POST /devices/search');
  });

  test('get_open_ports: the ports the REST route answers, from the watch store', async () => {
    const router = 'aa:00:00:00:00:01';
    const set = await app.request('POST', `/device/${router}`, { body: { devLastIP: '10.0.0.1' } });
    assert.equal(set.status, 200, set.text);
    // Stored as the port watch stores a scan.
    const db = new Database(join(app.dataDir, 'netkeep.db'));
    try {
      const store = sqliteStore(db).watch;
      await store.recordPortScans(
        [
          {
            mac: router,
            ports: [
              { port: 22, protocol: 'tcp', service: 'ssh', product: '', version: '' },
              { port: 443, protocol: 'tcp', service: 'https', product: '', version: '' },
            ],
          },
        ],
        new Date(),
        () => ({ events: [] }),
      );
    } finally {
      db.close();
    }
    for (const target of [router, 'AA-00-00-00-00-01', '10.0.0.1']) {
      const rest = await app.request('POST', '/device/open_ports', { body: { target } });
      assert.equal(rest.status, 200, rest.text);
      assert.deepEqual(
        (rest.json.open_ports as Json[]).map((p) => p.port),
        [22, 443],
      );
      const result = resultJson(await client.callTool({ name: 'get_open_ports', arguments: { target } }));
      assert.deepEqual(result, { isError: false, body: rest.body }, target);
    }
    // Nothing stored for the printer: the route's 404, as the tool's error.
    const none = await app.request('POST', '/device/open_ports', { body: { target: 'aa:00:00:00:00:02' } });
    assert.equal(none.status, 404);
    const result = resultJson(
      await client.callTool({ name: 'get_open_ports', arguments: { target: 'aa:00:00:00:00:02' } }),
    );
    assert.deepEqual(result, { isError: true, body: none.body });
  });

  test("trigger_scan: the route's 409 while scanning is off", async () => {
    const result = resultJson(await client.callTool({ name: 'trigger_scan', arguments: {} }));
    assert.deepEqual([result.isError, (result.body as Json).code], [true, 'SCAN_NOT_CONFIGURED']);
  });

  test('wol_wake_device: the magic packet reaches a loopback listener', async () => {
    const result = resultJson(
      await client.callTool({
        name: 'wol_wake_device',
        arguments: { devMac: '02:1a:2b:3c:4d:5e', broadcast: '127.255.255.255' },
      }),
    );
    assert.equal(result.isError, false, JSON.stringify(result.body));
    for (let i = 0; i < 100 && wolPackets.length < 3; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(wolPackets.length, 3);
    assert.equal(wolPackets[0]?.toString('hex'), 'ff'.repeat(6) + '021a2b3c4d5e'.repeat(16));
  });

  test('run_nmap_scan: a fast scan of 127.0.0.1', async () => {
    const result = resultJson(
      await client.callTool({ name: 'run_nmap_scan', arguments: { scan: '127.0.0.1', mode: 'fast' } }),
    );
    assert.equal(result.isError, false, JSON.stringify(result.body));
    assert.deepEqual([(result.body as Json).success, (result.body as Json).ip], [true, '127.0.0.1']);
  });

  test('concurrent calls with the same JSON-RPC id each get their own answer, under that id', async () => {
    // Clients number their own requests: many clients in flight at once send the same ids.
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${app.token}`,
    };
    const post = async (body: unknown, extra: Record<string, string> = {}) => {
      const res = await fetch(url, {
        method: 'POST',
        headers: { ...headers, ...extra },
        body: JSON.stringify(body),
      });
      return { status: res.status, text: await res.text() };
    };
    const queries = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? 'router' : 'laser'));
    const answers = await Promise.all(
      queries.map((query) =>
        post({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'search_devices', arguments: { query } },
        }),
      ),
    );
    answers.forEach((answer, i) => {
      assert.equal(answer.status, 200, answer.text);
      const message = JSON.parse(answer.text) as { id: unknown; result: unknown };
      assert.equal(message.id, 1);
      const { body } = resultJson(message.result);
      const names = ((body as Json).devices as Json[]).map((d) => d.devName);
      assert.deepEqual(names, [queries[i] === 'router' ? 'Router' : 'Laser']);
    });
    // What is not one ordinary request is answered by the SDK's own transport, as before.
    const batch = await post([
      { jsonrpc: '2.0', id: 'a', method: 'tools/list' },
      { jsonrpc: '2.0', id: 'b', method: 'ping' },
    ]);
    assert.equal(batch.status, 200, batch.text);
    assert.deepEqual(
      (JSON.parse(batch.text) as { id: string }[]).map((m) => m.id),
      ['a', 'b'],
    );
    const notification = await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    assert.deepEqual([notification.status, notification.text], [202, '']);
    const version = await post(
      { jsonrpc: '2.0', id: 2, method: 'ping' },
      { 'mcp-protocol-version': '1999-01-01' },
    );
    assert.equal(version.status, 400);
    assert.match(version.text, /Unsupported protocol version/);
    const accept = await post({ jsonrpc: '2.0', id: 3, method: 'ping' }, { accept: 'application/json' });
    assert.equal(accept.status, 406);
    const invalid = await post({ jsonrpc: '2.0', id: 4, method: 'ping', extra: true });
    assert.equal(invalid.status, 400);
    assert.match(invalid.text, /Invalid JSON-RPC message/);
    const unknownMethod = await post({ jsonrpc: '2.0', id: 5, method: 'no/such' });
    assert.equal(unknownMethod.status, 200);
    assert.deepEqual(JSON.parse(unknownMethod.text), {
      jsonrpc: '2.0',
      id: 5,
      error: { code: -32601, message: 'Method not found' },
    });
  });

  test('a wrong token is refused before anything runs', async () => {
    await assert.rejects(connect('wrong-token'), /403|Forbidden|Not authorized/i);
    const raw = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: 'Bearer wrong-token',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'set_device_alias', arguments: { mac: 'aa:00:00:00:00:01', alias: 'pwned' } },
      }),
    });
    assert.equal(raw.status, 403);
    assert.equal((await app.request('GET', '/device/aa:00:00:00:00:01')).json.devName, 'Router');
    // The direct route too (search_devices): no token, a wrong one, or a session cookie that is
    // not a session, and nothing is searched.
    for (const authorization of [undefined, 'Bearer wrong-token', `Basic ${app.token}`]) {
      const search = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          cookie: 'netkeep_session=not-a-session',
          ...(authorization === undefined ? {} : { authorization }),
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'search_devices', arguments: { query: 'router' } },
        }),
      });
      const text = await search.text();
      assert.equal(search.status, 403, text);
      assert.doesNotMatch(text, /Router|aa:00:00:00:00:01/);
    }
  });
});

/**
 * The published OpenAPI carries the real validation rules, taken from the validators themselves,
 * and the server enforces exactly those schemas: a schema-driven client or fuzzer can know what is
 * accepted. Before, only the device and tool routes did; the NetAlertX, event log and notification
 * routes published bare strings for `mac`, `period`, `status`, `since`/`until`, `format`, `type`,
 * and `sort`/`order` and the copy body's MACs had none either.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { notificationStatuses } from '../../src/alerts/model.js';
import { editableFields } from '../../src/devices/catalogue.js';
import { eventTypes } from '../../src/devices/history.js';
import { deviceListStatuses, sortColumns } from '../../src/devices/list-query.js';
import { periodNames } from '../../src/devices/params.js';
import { deviceGroups, presenceGroups } from '../../src/devices/status.js';
import { nmapModes } from '../../src/nettools/nmap.js';
import { acceptedTimePattern } from '../../src/time.js';
import {
  hostOrIpPattern,
  integerTextPattern,
  ipLiteralPattern,
  ipv4Pattern,
  macPattern,
  scanTargetPattern,
} from '../../src/validation.js';
import { InProcessServer } from '../helpers/inject.js';

interface Schema {
  readonly type?: string;
  readonly pattern?: string;
  readonly enum?: readonly unknown[];
  readonly anyOf?: readonly Schema[];
  readonly properties?: Readonly<Record<string, Schema>>;
}
interface Parameter {
  readonly name: string;
  readonly in: string;
  readonly schema: Schema;
}
interface Operation {
  readonly parameters?: readonly Parameter[];
  readonly requestBody?: { content?: Record<string, { schema?: Schema }> };
}

/** Query and path parameters that are free by design, and why. */
const freeParameters: Readonly<Record<string, string>> = {
  'GET /devices q': 'free text searched in name, MAC, IP, vendor and owner',
  'GET /devices site':
    'a devSite value, free text like the field it is compared with (exactly, as a bound parameter; at most 64 characters)',
  'GET /php/server/devices.php action': "any other action is NetAlertX's 404 NOT_OFFERED, not a 400",
  'GET /php/server/query_json.php file': "any other file is NetAlertX's 404 NOT_OFFERED, not a 400",
};

/** The rule a schema carries: its pattern or enum, also inside a nullable union. */
function ruleOf(schema: Schema): { pattern?: string; enum?: readonly unknown[] } {
  const branch = schema.anyOf?.find((b) => b.pattern !== undefined || b.enum !== undefined) ?? schema;
  return { pattern: branch.pattern, enum: branch.enum };
}

describe('OpenAPI rules', () => {
  let app: InProcessServer;
  let operations: Map<string, Operation>;
  before(async () => {
    app = await InProcessServer.start();
    const spec = (await app.request('GET', '/openapi.json', { token: null })).json as {
      paths: Record<string, Record<string, Operation>>;
    };
    operations = new Map(
      Object.entries(spec.paths).flatMap(([path, methods]) =>
        Object.entries(methods).map(([method, op]) => [`${method.toUpperCase()} ${path}`, op] as const),
      ),
    );
  });
  after(async () => {
    await app.stop();
  });

  const parameter = (operation: string, name: string): Schema => {
    const schema = operations.get(operation)?.parameters?.find((p) => p.name === name)?.schema;
    assert.ok(schema, `${operation} has a parameter ${name}`);
    return schema;
  };
  const property = (operation: string, name: string): Schema => {
    const body = operations.get(operation)?.requestBody?.content?.['application/json']?.schema;
    const schema = body?.properties?.[name];
    assert.ok(schema, `${operation} has a body field ${name}`);
    return schema;
  };

  test('every query and path parameter carries a pattern or an enum, but the free ones', () => {
    const bare: string[] = [];
    for (const [operation, op] of operations)
      for (const p of op.parameters ?? []) {
        if (p.in !== 'query' && p.in !== 'path') continue;
        const rule = ruleOf(p.schema);
        const key = `${operation} ${p.name}`;
        if (rule.pattern === undefined && rule.enum === undefined && !(key in freeParameters)) bare.push(key);
      }
    assert.deepEqual(bare, []);
  });

  test("the rules are the validators' own", () => {
    const patterns: [string, string, Schema, string][] = [];
    const enums: [string, string, Schema, readonly unknown[]][] = [];
    for (const [operation, op] of operations)
      for (const p of op.parameters ?? []) {
        if (p.name === 'mac') patterns.push([operation, p.name, p.schema, macPattern]);
        if (p.name === 'offset' || p.name === 'limit')
          patterns.push([operation, p.name, p.schema, integerTextPattern]);
        if (p.name === 'since' || p.name === 'until')
          patterns.push([operation, p.name, p.schema, acceptedTimePattern]);
        if (p.name === 'period')
          enums.push([
            operation,
            p.name,
            p.schema,
            operation === 'GET /sessions/totals' ? [...periodNames, '100 years'] : periodNames,
          ]);
      }
    enums.push(
      ['GET /devices', 'status', parameter('GET /devices', 'status'), deviceListStatuses],
      ['GET /devices', 'sort', parameter('GET /devices', 'sort'), sortColumns],
      ['GET /devices', 'order', parameter('GET /devices', 'order'), ['asc', 'desc']],
      [
        'GET /devices/by-status',
        'status',
        parameter('GET /devices/by-status', 'status'),
        [...deviceGroups, ...presenceGroups, 'all'],
      ],
      ['GET /notifications', 'status', parameter('GET /notifications', 'status'), notificationStatuses],
      ['GET /devices/export', 'format', parameter('GET /devices/export', 'format'), ['csv', 'json']],
      [
        'GET /devices/export/{format}',
        'format',
        parameter('GET /devices/export/{format}', 'format'),
        ['csv', 'json'],
      ],
      ['POST /nettools/nmap', 'mode', property('POST /nettools/nmap', 'mode'), Object.keys(nmapModes)],
    );
    for (const name of ['macFrom', 'macTo'])
      patterns.push(['POST /device/copy', name, property('POST /device/copy', name), macPattern]);
    patterns.push(
      ['POST /nettools/wakeonlan', 'devMac', property('POST /nettools/wakeonlan', 'devMac'), macPattern],
      [
        'POST /nettools/wakeonlan',
        'broadcast',
        property('POST /nettools/wakeonlan', 'broadcast'),
        ipv4Pattern,
      ],
      [
        'POST /nettools/traceroute',
        'devLastIP',
        property('POST /nettools/traceroute', 'devLastIP'),
        ipLiteralPattern,
      ],
      [
        'POST /nettools/nslookup',
        'devLastIP',
        property('POST /nettools/nslookup', 'devLastIP'),
        hostOrIpPattern,
      ],
      ['POST /nettools/nmap', 'scan', property('POST /nettools/nmap', 'scan'), scanTargetPattern],
    );
    for (const field of editableFields.filter((f) => f.kind === 'time'))
      patterns.push([
        'POST /device/{mac}',
        field.name,
        property('POST /device/{mac}', field.name),
        acceptedTimePattern,
      ]);
    assert.ok(
      patterns.length >= 20 && enums.length >= 10,
      `${patterns.length} patterns, ${enums.length} enums`,
    );
    for (const [operation, name, schema, pattern] of patterns)
      assert.equal(ruleOf(schema).pattern, pattern, `${operation} ${name}`);
    for (const [operation, name, schema, values] of enums)
      assert.deepEqual(ruleOf(schema).enum, values, `${operation} ${name}`);
    // The event types of the log filter: a pattern built from the list, which it accepts.
    const type = ruleOf(parameter('GET /history/events', 'type')).pattern ?? '';
    const typeRule = new RegExp(type, 'u');
    assert.ok(typeRule.test(eventTypes.join(', ')) && typeRule.test('') && !typeRule.test('Bogus'), type);
  });

  test("a value outside a published rule is the 400 of the field's own validator", async () => {
    const cases: [string, string, RegExp][] = [
      ['/events?mac=nope', 'INVALID_MAC', /^mac is not a MAC address \(aa:bb/],
      ['/devices/by-status?status=On-line', 'INVALID_STATUS', /^status must be one of: my, connected/],
      ['/sessions/totals?period=2%20days', 'INVALID_PERIOD', /^period must be one of: 1 day, .*100 years\.$/],
      ['/notifications?status=done', 'INVALID_NOTIFICATION_STATUS', /^status must be one of: pending, sent/],
      ['/devices/export?format=xml', 'INVALID_FORMAT', /^format must be one of: csv, json\.$/],
      ['/devices/export/xml', 'INVALID_FORMAT', /'format' must be one of: csv, json/],
      ['/history/events?since=yesterday', 'INVALID_TIME', /^since must be an ISO 8601 date-time\.$/],
      ['/history/events?until=-1', 'INVALID_TIME', /^until must be an ISO 8601/],
      [
        '/history/events?type=Bogus',
        'INVALID_EVENT_TYPE',
        /^type must be a comma-separated list of: New Device/,
      ],
      ['/history/events?type=Connected,', 'INVALID_EVENT_TYPE', /^type must be a comma-separated list/],
      ['/devices?sort=devGUID', 'INVALID_SORT', /^sort must be one of: devName, /],
      ['/devices?order=up', 'INVALID_ORDER', /^order must be one of: asc, desc\.$/],
    ];
    for (const [path, code, message] of cases) {
      const res = await app.request('GET', path);
      assert.deepEqual([res.status, res.json.code], [400, code], `${path}: ${res.text}`);
      assert.match(String(res.json.message), message, path);
    }
    const copy = await app.request('POST', '/device/copy', {
      body: { macFrom: 'nope', macTo: '02:00:00:00:00:02' },
    });
    assert.deepEqual([copy.status, copy.json.code], [400, 'INVALID_MAC'], copy.text);
    assert.match(String(copy.json.message), /field 'macFrom' is not a MAC address/);
    // What the rules accept still passes them (a blank type list is "every type").
    for (const path of [
      '/events?mac=AA-BB-CC-DD-EE-FF',
      '/devices/by-status?status=all',
      '/devices/by-status?status=online',
      '/devices/by-status?status=offline',
      '/sessions/totals?period=100%20years',
      '/notifications?status=sent',
      '/history/events?type=%20Connected%20,Device%20Down&since=2026-01-01&until=2026-01-31T10:00:00Z',
      '/history/events?type=',
      '/devices?sort=devName&order=desc',
    ])
      assert.equal((await app.request('GET', path)).status, 200, path);
  });

  test("a device's time field says what it accepts once", async () => {
    const res = await app.request('POST', '/device/02:00:00:00:00:09', {
      body: { createNew: true, devFirstConnection: 'yesterday' },
    });
    assert.equal(res.status, 400);
    assert.match(
      String(res.json.message),
      /devFirstConnection must be a value that is an ISO 8601 date-time or null$/,
    );
  });
});

/**
 * Schema-driven fuzzing: fast-check generates requests for every operation of the server's own
 * /openapi.json, valid and hostile (option injection, shell metacharacters, huge ranges, wrong JSON
 * types, Unicode look-alikes and direction marks, over-long values), sends them to the real server
 * and checks that no answer is a 5xx and that every answer is declared for its operation and
 * matches the declared schema (Ajv against the OpenAPI document). Bounded in time.
 *
 * Network safety: every tool setting points at loopback stand-ins (DNS, internet info, speed test,
 * Wake-on-LAN broadcast), and a request that the server's own validators would accept with a target
 * outside 127.0.0.0/8 or ::1 is never sent (`offLoopback`): what nmap, traceroute and Wake-on-LAN
 * may reach is exactly what those validators accept.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import Ajv from 'ajv';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { acceptedTimePattern } from '../../src/time.js';
import {
  hostOrIpPattern,
  integerTextPattern,
  ipLiteralPattern,
  ipv4Pattern,
  ipVersion,
  macPattern,
  parseScanTarget,
  scanTargetPattern,
} from '../../src/validation.js';
import { startDnsStandIn, type DnsStandIn } from '../helpers/dns.js';
import { startLoopbackSpeedServer, type LoopbackSpeedServer } from '../helpers/speedserver.js';
import { TestServer } from '../helpers/server.js';

/** Total time the generated requests may take (the suite's budget for this file). */
const budgetMs = 30_000;

type Schema = Record<string, unknown>;
interface Operation {
  readonly method: string;
  readonly path: string;
  readonly parameters: { name: string; in: string; required?: boolean; schema: Schema }[];
  readonly body: Schema | undefined;
  readonly responses: Record<string, Schema | undefined>;
}
interface FuzzRequest {
  readonly op: Operation;
  readonly path: string;
  readonly query: [string, string][];
  readonly body: unknown;
}

// ---------------------------------------------------------------------------------------------
// Generators

const hostile: string[] = [
  '-oN /tmp/x',
  '--script=http-title',
  '-iL /etc/passwd',
  '127.0.0.1 -oN /tmp/x',
  '127.0.0.1;id',
  '$(id)',
  '`id`',
  '| cat /etc/passwd',
  '../../etc/passwd',
  '%00',
  '\u0000',
  '１２７.０.０.１', // fullwidth digits
  '\u202e127.0.0.1', // right-to-left override
  '127.0.0.1\u200f', // right-to-left mark
  '127.0.0.1\n',
  ' 127.0.0.1',
  '0/0',
  '::/0',
  '127.0.0.0/0',
  '10.0.0.0/8',
  '::ffff:127.0.0.1',
  '127.0.0.01',
  'fe80::1%eth0',
  'aa:bb:cc:dd:ee:ff:00',
  'ＡＡ:bb:cc:dd:ee:ff',
  '1 day; DROP TABLE Devices',
  "' OR 1=1 --",
  'On-line\u0000',
  'a'.repeat(300),
  '9'.repeat(40),
  '-1',
  '1e3',
  '0x10',
  '',
];

const hostileString = fc.oneof(
  fc.constantFrom(...hostile),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
);
const wrongType = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
);

const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
const loopbackV4 = fc
  .tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 1, max: 254 }))
  .map(([a, b, c]) => `127.${a}.${b}.${c}`);

/** Valid values for each pattern the schemas use (targets on loopback only). */
const validByPattern: Record<string, fc.Arbitrary<string>> = {
  [macPattern]: fc.oneof(
    hex(12).map((h) => h.match(/../g)?.join(':') ?? h),
    hex(12).map((h) => (h.match(/../g)?.join('-') ?? h).toUpperCase()),
    hex(12).map((h) => h.match(/..../g)?.join('.') ?? h),
    hex(12),
  ),
  [integerTextPattern]: fc.integer({ min: 0, max: 1200 }).map(String),
  [ipv4Pattern]: loopbackV4,
  [ipLiteralPattern]: fc.oneof(loopbackV4, fc.constant('::1')),
  [scanTargetPattern]: fc.oneof(
    loopbackV4,
    fc.constant('::1'),
    fc.integer({ min: 29, max: 32 }).map((prefix) => `127.0.0.0/${prefix}`),
  ),
  [hostOrIpPattern]: fc.oneof(loopbackV4, fc.constantFrom('fuzz.test', 'nas.lan', 'localhost', '::1')),
  [acceptedTimePattern]: fc
    .date({
      min: new Date('2000-01-01T00:00:00Z'),
      max: new Date('2099-12-31T00:00:00Z'),
      noInvalidDate: true,
    })
    .map((d) => d.toISOString()),
};

/** A value for `schema`: mostly valid, sometimes hostile or of the wrong type. */
function valueFor(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (schema === undefined) return fc.anything({ maxDepth: 2 });
  const valid = validFor(schema, depth);
  return fc.oneof(
    { arbitrary: valid, weight: 6 },
    { arbitrary: hostileString, weight: 2 },
    { arbitrary: wrongType, weight: 1 },
  );
}

function validFor(schema: Schema, depth: number): fc.Arbitrary<unknown> {
  const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (branches) return fc.oneof(...branches.map((branch) => validFor(branch, depth)));
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if ('const' in schema) return fc.constant(schema.const);
  switch (schema.type) {
    case 'string': {
      const pattern = schema.pattern as string | undefined;
      if (pattern !== undefined) return validByPattern[pattern] ?? fc.stringMatching(new RegExp(pattern));
      return fc.string({ maxLength: Math.min(Number(schema.maxLength ?? 64), 64) });
    }
    case 'integer':
      return fc.integer({ min: Number(schema.minimum ?? -1000), max: Number(schema.maximum ?? 100_000) });
    case 'number':
      return fc.double({ noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return depth > 2
        ? fc.constant([])
        : fc.array(validFor((schema.items as Schema | undefined) ?? {}, depth + 1), { maxLength: 3 });
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const entries = Object.entries(properties);
      if (entries.length === 0 || depth > 2)
        return fc.dictionary(
          fc.string({ maxLength: 8 }),
          fc.oneof(fc.string({ maxLength: 8 }), fc.integer()),
          {
            maxKeys: 3,
          },
        );
      return fc.record(Object.fromEntries(entries.map(([name, s]) => [name, valueFor(s, depth + 1)])), {
        requiredKeys: [],
      });
    }
    default:
      return fc.anything({ maxDepth: 1 });
  }
}

function requestFor(op: Operation): fc.Arbitrary<FuzzRequest> {
  const pathParams = op.parameters.filter((p) => p.in === 'path');
  const queryParams = op.parameters.filter((p) => p.in === 'query');
  const stringOf = (schema: Schema) =>
    fc.oneof(
      { arbitrary: validFor(schema, 0).map(String), weight: 4 },
      { arbitrary: hostileString, weight: 2 },
    );
  return fc
    .record({
      params: fc.tuple(...pathParams.map((p) => stringOf(p.schema))),
      query: fc.tuple(...queryParams.map((p) => fc.option(stringOf(p.schema), { nil: undefined }))),
      extraQuery: fc.option(fc.tuple(fc.constantFrom('stauts', 'limit', 'x'), hostileString), {
        nil: undefined,
      }),
      body:
        op.body === undefined
          ? fc.constant(undefined)
          : fc.oneof(
              { arbitrary: validFor(op.body, 0), weight: 4 },
              { arbitrary: valueFor(op.body), weight: 4 },
              { arbitrary: wrongType, weight: 1 },
            ),
    })
    .map(({ params, query, extraQuery, body }) => {
      let path = op.path;
      pathParams.forEach((p, i) => {
        // '.' and '..' (even %-encoded) are dot segments a URL client removes; fetch cannot send them.
        const segment = encodeURIComponent(String(params[i])).replace(/^\.{1,2}$/, (dots) => `${dots}x`);
        path = path.replace(`{${p.name}}`, segment);
      });
      const pairs: [string, string][] = [];
      queryParams.forEach((p, i) => {
        const value = query[i];
        if (value !== undefined) pairs.push([p.name, value]);
      });
      if (extraQuery) pairs.push(extraQuery);
      return { op, path, query: pairs, body };
    });
}

// ---------------------------------------------------------------------------------------------
// The network guard

function isLoopback(address: string): boolean {
  const parsed = ipaddr.parse(address);
  return parsed.range() === 'loopback';
}

/**
 * True when the server's validators would accept a target outside loopback in this request: it is
 * then not sent. nslookup only ever asks DNS_SERVER (a loopback stand-in), whatever the name.
 */
function offLoopback(req: FuzzRequest): boolean {
  const body = (typeof req.body === 'object' && req.body !== null ? req.body : {}) as Record<string, unknown>;
  if (
    req.path === '/nettools/traceroute' &&
    typeof body.devLastIP === 'string' &&
    ipVersion(body.devLastIP) !== null
  )
    return !isLoopback(body.devLastIP);
  if (req.path === '/nettools/nmap' && typeof body.scan === 'string') {
    const target = parseScanTarget(body.scan);
    if (target === null) return false;
    const [network, prefix] = body.scan.includes('/')
      ? ipaddr.parseCIDR(body.scan)
      : [ipaddr.parse(target.target), target.version === 4 ? 32 : 128];
    return !(network.range() === 'loopback' && prefix >= (target.version === 4 ? 8 : 128));
  }
  if (
    req.path === '/nettools/wakeonlan' &&
    typeof body.broadcast === 'string' &&
    ipVersion(body.broadcast) === 4
  )
    return !isLoopback(body.broadcast);
  return false;
}

// ---------------------------------------------------------------------------------------------

describe('schema-driven fuzzing of every operation', () => {
  let server: TestServer;
  let dns: DnsStandIn;
  let info: Server;
  let speed: LoopbackSpeedServer;

  before(async () => {
    dns = await startDnsStandIn({ 'fuzz.test': '127.0.0.5' });
    info = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ ip: '127.0.0.1', city: 'Loop', country: 'LO', org: 'AS0 Loopback' }));
    });
    await new Promise<void>((resolve) => info.listen(0, '127.0.0.1', resolve));
    const infoAddress = info.address();
    const infoPort = typeof infoAddress === 'object' && infoAddress !== null ? infoAddress.port : 0;
    speed = await startLoopbackSpeedServer();
    server = await TestServer.start({
      env: {
        DNS_SERVER: dns.address,
        INTERNETINFO_URL: `http://127.0.0.1:${infoPort}/json`,
        SPEEDTEST_BACKEND: 'builtin',
        SPEEDTEST_SERVER_URL: speed.url,
        SPEEDTEST_STREAMS: '1',
        SPEEDTEST_DURATION_MS: '500',
        WOL_BROADCAST: '127.255.255.255',
        WOL_PORT: '40009',
        TOOL_CONCURRENCY: '2',
        NMAP_MAX_HOSTS: '16',
      },
    });
  });
  after(async () => {
    await server.stop();
    await dns.close();
    info.close();
    speed.stop();
  });

  test('no 5xx, and every answer is declared and matches its schema', async (t) => {
    const spec = (await server.request('GET', '/openapi.json', { token: null })).json as {
      paths: Record<string, Record<string, Schema>>;
    };
    // OpenAPI 3.0 writes "string or null" as `nullable: true`; as JSON Schema it is a type list.
    const jsonSchemaOf = (node: unknown): unknown => {
      if (Array.isArray(node)) return node.map(jsonSchemaOf);
      if (typeof node !== 'object' || node === null) return node;
      const copy = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, jsonSchemaOf(v)]));
      if (copy.nullable === true && typeof copy.type === 'string') copy.type = [copy.type, 'null'];
      if (copy.nullable === true && Array.isArray(copy.enum)) copy.enum = [...(copy.enum as unknown[]), null];
      delete copy.nullable;
      return copy;
    };
    const ajv = new Ajv({ allErrors: true, unknownFormats: 'ignore', schemaId: 'auto' });
    ajv.addSchema(jsonSchemaOf(spec) as object, 'openapi');
    const pointer = (...parts: string[]): string =>
      `openapi#/${parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;

    const operations: Operation[] = [];
    /** Operations whose answer is not JSON (an endless event stream, Prometheus text): not fuzzed here. */
    const notJson: string[] = [];
    for (const [path, methods] of Object.entries(spec.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const requestBody = operation.requestBody as
          { content?: Record<string, { schema?: Schema }> } | undefined;
        const responses = operation.responses as Record<string, { content?: Record<string, unknown> }>;
        if (!('application/json' in (responses['200']?.content ?? {}))) {
          notJson.push(`${method.toUpperCase()} ${path}`);
          continue;
        }
        operations.push({
          method: method.toUpperCase(),
          path,
          parameters: (operation.parameters ?? []) as Operation['parameters'],
          body: requestBody?.content?.['application/json']?.schema,
          responses: Object.fromEntries(
            Object.keys(responses).map((status) => [
              status,
              {
                $ref: pointer(
                  'paths',
                  path,
                  method,
                  'responses',
                  status,
                  'content',
                  'application/json',
                  'schema',
                ),
              },
            ]),
          ),
        });
      }
    }
    assert.ok(operations.length >= 15, `${operations.length} operations in /openapi.json`);

    const deadline = Date.now() + budgetMs;
    const seen = new Map<string, number>();
    let skipped = 0;
    for (const [index, op] of operations.entries()) {
      // Each operation gets an equal share of what is left of the budget.
      const opDeadline = Date.now() + Math.max(0, deadline - Date.now()) / (operations.length - index);
      const hasInput = op.parameters.length > 0 || op.body !== undefined;
      const property = fc.asyncProperty(requestFor(op), async (req) => {
        if (offLoopback(req)) {
          skipped++;
          return;
        }
        const query = req.query.length > 0 ? `?${new URLSearchParams(req.query).toString()}` : '';
        const res = await server.request(op.method, `${req.path}${query}`, {
          ...(req.body === undefined ? {} : { body: req.body }),
          signal: AbortSignal.timeout(20_000),
        });
        const key = `${op.method} ${op.path} ${res.status}`;
        seen.set(key, (seen.get(key) ?? 0) + 1);
        const where = `${op.method} ${req.path}${query} ${JSON.stringify(req.body ?? null).slice(0, 200)} -> ${res.status} ${res.text.slice(0, 300)}`;
        assert.ok(res.status < 500, `5xx: ${where}`);
        assert.ok(String(res.status) in op.responses, `undeclared status: ${where}`);
        const validate = ajv.getSchema(
          pointer(
            'paths',
            op.path,
            op.method.toLowerCase(),
            'responses',
            String(res.status),
            'content',
            'application/json',
            'schema',
          ),
        );
        assert.ok(validate, `no schema for ${key}`);
        assert.ok(
          validate(res.body),
          `answer outside its schema: ${where}\n${ajv.errorsText(validate.errors)}`,
        );
      });
      // Batches of runs (each with a fresh seed) until the share is used; at least one batch.
      do await fc.assert(property, { numRuns: hasInput ? 5 : 1 });
      while (hasInput && Date.now() < opDeadline);
    }
    t.diagnostic(
      `answers: ${JSON.stringify(Object.fromEntries(seen))}; skipped off-loopback: ${skipped}; not JSON: ${notJson.join(', ')}`,
    );
  });
});

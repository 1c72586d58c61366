/**
 * NetAlertX's REST endpoints that real clients call (dashboards, inventory scripts, its own CSV
 * export/import), with NetAlertX's shapes, so those clients work unchanged against netkeep. Where
 * netkeep deliberately differs, docs/netalertx.md says how and why. Lists are streamed in pages, so
 * an export of every device or every event never sits whole in memory.
 */
import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ChangeFeed } from '../events.js';
import type { App } from '../http/app.js';
import { ApiError } from '../http/errors.js';
import { jsonArrayStream, keyedPages } from '../http/json-stream.js';
import { commonErrors, ErrorRef, optionalBody } from '../http/schemas.js';
import { fieldsByName, rowToJson, storedFields, type DbValue, type DeviceRow } from '../devices/catalogue.js';
import { convertDevice } from '../import/device-values.js';
import { LocalTimeReader } from '../import/local-time.js';
import type { DeviceStore } from '../store/devices.js';
import { deviceGroups, presenceGroups, totalsArray } from '../devices/status.js';
import { periodNames } from '../devices/params.js';
import { periodStartDate, type Period } from '../time.js';
import { stringEnum } from '../enum-schema.js';
import { macPattern, normalizeMac } from '../validation.js';
import { csvLine, CsvError, CsvReader, unguard } from './csv.js';
import { jsonBase64Content, limitedChunks, multipartPart } from './import-body.js';
import type { ByStatusGroup, CompatStore, EventCursor, ImportedDevice } from '../store/compat.js';

export interface CompatRoutesOptions {
  readonly store: CompatStore;
  /** The status counters, as the device store keeps them (the numbers of GET /devices/totals). */
  readonly devices: Pick<DeviceStore, 'totals'>;
  readonly feed?: ChangeFeed;
  /** IMPORT_BODY_LIMIT: the largest body of POST /devices/import (JSON or multipart). */
  readonly importBodyLimit: number;
}

const tags = ['netalertx'];
/** Events read per page of a streamed list (an event row is small). */
const pageSize = 500;
/**
 * Devices read per page of a streamed list. A device row may hold ~330 KB of text (every text field
 * at 16 KB, devCustomProps at 64 KB): 16 keep a page near 5 MB, where 500 held 165 MB.
 */
const devicePageSize = 16;

/** Every device row, read a page of devicePageSize at a time in MAC order (the exports, the topology). */
export function deviceRows(store: Pick<CompatStore, 'devicesAfter'>): AsyncGenerator<DeviceRow> {
  return keyedPages(
    (after, size) => store.devicesAfter(after, size),
    (row) => String(row.devMac),
    devicePageSize,
  );
}
const storedNames = storedFields.map((f) => f.name);

// NetAlertX 2026 added online/offline (server/api_server/api_server_start.py, docs/API_DEVICES.md).
const byStatusValues = [...deviceGroups, ...presenceGroups, 'all'] as const;
/** NetAlertX's clients send '100 years' for "all time". */
const sessionPeriods = [...periodNames, '100 years'];
const exportFormats = ['csv', 'json'] as const;

const StatusItemSchema = Type.Object({
  id: Type.String({ description: 'MAC address (canonical form).' }),
  title: Type.String({ description: 'devName.' }),
  favorite: Type.Integer({ description: 'devFavorite, 0 or 1.' }),
});

const ImportResult = Type.Object({
  success: Type.Literal(true),
  inserted: Type.Integer({ description: 'Devices created.' }),
  updated: Type.Integer({ description: 'Devices that existed and took the CSV values.' }),
  skipped_lines: Type.Array(Type.Integer(), {
    description: 'Data rows not imported (1 = the first after the header).',
  }),
  skipped: Type.Array(Type.Object({ line: Type.Integer(), reason: Type.String() })),
  ignored_columns: Type.Array(Type.String(), { description: 'Header columns that are not device fields.' }),
  notes: Type.Array(Type.Object({ line: Type.Integer(), note: Type.String() }), {
    description: 'Values refused by the field rules; the field kept its value (or default).',
  }),
});

/** CSV times carry no zone: they are read as UTC, as netkeep stores and exports them. */
const csvTimes = new LocalTimeReader('UTC');

function badRequest(message: string, code: string): ApiError {
  return ApiError.badRequest(message, code);
}

function parseGroup(raw: string | undefined): ByStatusGroup | undefined {
  if (raw === undefined || raw === 'all') return undefined;
  if ((byStatusValues as readonly string[]).includes(raw)) return raw as ByStatusGroup;
  throw badRequest(`status must be one of: ${byStatusValues.join(', ')}.`, 'INVALID_STATUS');
}

function parseFormat(raw: string | undefined): 'csv' | 'json' {
  if (raw === undefined || raw === 'csv') return 'csv';
  if (raw === 'json') return 'json';
  throw badRequest('format must be csv or json.', 'INVALID_FORMAT');
}

/** A device row is at most ~330 K characters (the fields' bounds): a longer row is not a device. */
const maxImportRowChars = 1024 * 1024;
/** More lines skipped than this: the file is not a device CSV, and the import is refused whole. */
const maxSkippedLines = 1000;

interface ImportPlan {
  readonly devices: ImportedDevice[];
  readonly skipped: { line: number; reason: string }[];
  readonly notes: { line: number; note: string }[];
  readonly ignored: string[];
}

function csvInvalid(message: string): ApiError {
  return badRequest(`The CSV cannot be read: ${message}.`, 'IMPORT_CSV_INVALID');
}

/**
 * Reads the CSV's rows, as they arrive, into devices to upsert. A row that cannot be taken (a wrong
 * number of fields, no valid MAC, a MAC seen before) is skipped with its reason, as NetAlertX skips
 * it; a CSV that cannot be read (not UTF-8, a quote never closed, a row over 1 Mi characters, no devMac in the
 * header, more than 1000 skipped lines) is a 400 naming its first bad line. Nothing is written
 * until the whole CSV has been read.
 */
class ImportPlanner {
  readonly plan: ImportPlan = { devices: [], skipped: [], notes: [], ignored: [] };
  private header: string[] = [];
  private columns = new Map<string, string>();
  private readonly seen = new Map<string, number>();

  readonly row = (fields: string[], line: number): void => {
    if (line === 0) this.readHeader(fields);
    else this.readRecord(fields, line);
  };

  private readHeader(fields: string[]): void {
    this.header = fields.map((h) => h.trim());
    if (!this.header.includes('devMac'))
      throw csvInvalid(
        `the header (line 0) has no devMac column; its columns must be device fields (${storedNames.join(', ')})`,
      );
    this.columns = new Map(this.header.filter((name) => fieldsByName.has(name)).map((name) => [name, name]));
    this.plan.ignored.push(...this.header.filter((name) => !fieldsByName.has(name)));
  }

  private skip(line: number, reason: string): void {
    const { skipped } = this.plan;
    if (skipped.length >= maxSkippedLines) {
      const [firstBad] = skipped;
      throw csvInvalid(
        `more than ${maxSkippedLines} lines are not devices; the first is line ${firstBad?.line ?? line} (${firstBad?.reason ?? reason})`,
      );
    }
    skipped.push({ line, reason });
  }

  private readRecord(fields: string[], line: number): void {
    const { header, columns, plan } = this;
    if (fields.length !== header.length) {
      this.skip(line, `${fields.length} fields where the header has ${header.length}`);
      return;
    }
    const row: Record<string, string> = {};
    header.forEach((name, i) => {
      if (columns.has(name)) row[name] = unguard(fields[i] ?? '');
    });
    const converted = convertDevice(row, columns, csvTimes);
    if (!converted.ok) {
      this.skip(line, converted.reason);
      return;
    }
    const first = this.seen.get(converted.mac);
    if (first !== undefined) {
      this.skip(line, `same MAC as line ${first}`);
      return;
    }
    this.seen.set(converted.mac, line);
    for (const note of converted.notes) plan.notes.push({ line, note });
    const { devGUID, ...rest } = converted.columns;
    const changes: Record<string, DbValue> = {};
    for (const [name, value] of Object.entries(rest))
      if (fieldsByName.get(name)?.editable) changes[name] = value;
    plan.devices.push({
      mac: converted.mac,
      changes,
      guid: typeof devGUID === 'string' ? devGUID : undefined,
    });
  }
}

/** The CSV bytes of an import body: a multipart part named `file`, or JSON `{content: base64}`. */
function csvBytes(request: FastifyRequest, limit: number): AsyncIterable<Buffer> {
  const body: unknown = request.body;
  if (!(body instanceof Readable))
    throw badRequest(
      'Send the CSV as JSON {"content": "<base64>"} or as a multipart part named \'file\'.',
      'IMPORT_BODY_INVALID',
    );
  const contentType = request.headers['content-type'] ?? '';
  const chunks = limitedChunks(
    body,
    limit,
    request.headers['content-length'],
    () =>
      new ApiError(
        413,
        'Payload Too Large',
        `The request body is larger than the limit of ${limit} bytes (IMPORT_BODY_LIMIT).`,
      ),
  );
  const media = contentType.split(';')[0]?.trim().toLowerCase();
  if (media === 'multipart/form-data') return multipartPart(chunks, contentType, 'file');
  if (media === 'application/json') return jsonBase64Content(chunks);
  throw new ApiError(
    415,
    'Unsupported Media Type',
    'POST /devices/import takes application/json {"content": "<base64>"} or multipart/form-data.',
  );
}

/** Reads the whole import body through the CSV reader into a plan; writes nothing. */
async function planImport(request: FastifyRequest, limit: number): Promise<ImportPlan> {
  const planner = new ImportPlanner();
  const reader = new CsvReader(planner.row, maxImportRowChars);
  try {
    for await (const bytes of csvBytes(request, limit)) reader.push(bytes);
    reader.end();
  } catch (err) {
    if (err instanceof CsvError) throw csvInvalid(err.message);
    throw err;
  }
  return planner.plan;
}

export default async function compatRoutes(app: App, opts: CompatRoutesOptions): Promise<void> {
  const { store, feed, devices } = opts;

  const statusParam = Type.Optional(
    stringEnum(
      byStatusValues,
      `${byStatusValues.join(', ')} (default all; my = not archived; online/offline = not archived, present/absent in the last scan).`,
    ),
  );
  const byStatusSchema = {
    tags,
    summary: 'Devices of a status group as NetAlertX lists them: [{id, title, favorite}].',
    response: { 200: Type.Array(StatusItemSchema), ...commonErrors },
  };
  // Streamed: every device's name (up to 16 KB each) must not be held as one array and string.
  const sendByStatus = (reply: FastifyReply, raw: string | undefined): FastifyReply => {
    const group = parseGroup(raw);
    const items = keyedPages(
      (after, size) => store.byStatusAfter(group, after, size),
      (item) => item.id,
      devicePageSize,
    );
    return reply.type('application/json; charset=utf-8').send(jsonArrayStream(items));
  };
  app.get(
    '/devices/by-status',
    {
      schema: {
        ...byStatusSchema,
        querystring: Type.Object({ status: statusParam }, { additionalProperties: false }),
      },
    },
    async (request, reply) => sendByStatus(reply, request.query.status),
  );
  // NetAlertX's POST form (its MCP tool list_devices): the status in a JSON body, optional.
  app.post(
    '/devices/by-status',
    {
      schema: {
        ...byStatusSchema,
        body: Type.Object({ status: statusParam }, { additionalProperties: false }),
      },
      preValidation: optionalBody,
    },
    async (request, reply) => sendByStatus(reply, request.body.status),
  );

  /** The export as a stream of CSV lines or JSON text, read a page of devices at a time. */
  const exportStream = (format: 'csv' | 'json'): Readable => {
    async function* pages(): AsyncGenerator<string> {
      let first = true;
      yield format === 'csv' ? csvLine(storedNames) : '{"data":[';
      const rows = deviceRows(store);
      for await (const row of rows) {
        if (format === 'csv') yield csvLine(storedNames.map((name) => row[name] ?? null));
        else {
          yield `${first ? '' : ','}${JSON.stringify(rowToJson(row))}`;
          first = false;
        }
      }
      if (format === 'json') yield `],"columns":${JSON.stringify(storedNames)}}`;
    }
    return Readable.from(pages());
  };
  const exportHeaders = (format: 'csv' | 'json'): Record<string, string> =>
    format === 'csv'
      ? {
          'content-type': 'text/csv; charset=utf-8',
          'content-disposition': 'attachment; filename=devices.csv',
        }
      : { 'content-type': 'application/json; charset=utf-8' };

  const sendExport = (reply: FastifyReply, format: 'csv' | 'json'): FastifyReply =>
    reply.headers(exportHeaders(format)).send(exportStream(format));

  const exportSchema = {
    tags,
    summary:
      'Every device, every stored column: CSV (attachment devices.csv, every value quoted) or JSON {data, columns}.',
    response: { 400: ErrorRef, 403: ErrorRef },
  };
  app.get(
    '/devices/export',
    {
      schema: {
        ...exportSchema,
        querystring: Type.Object(
          { format: Type.Optional(stringEnum(exportFormats, 'csv (default) or json.', 'INVALID_FORMAT')) },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => sendExport(reply, parseFormat(request.query.format)),
  );
  app.get(
    '/devices/export/:format',
    {
      schema: {
        ...exportSchema,
        params: Type.Object({ format: stringEnum(exportFormats, 'csv or json.', 'INVALID_FORMAT') }),
      },
    },
    async (request, reply) => sendExport(reply, parseFormat(request.params.format)),
  );

  // POST /devices/import in a scope of its own: its body (up to IMPORT_BODY_LIMIT, not BODY_LIMIT)
  // reaches the handler as the request stream, which reads it as it arrives. Auth (an onRequest
  // hook) has run before any of it is read.
  await app.register(async (scope: App) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => {
      done(null, payload);
    });
    scope.post(
      '/devices/import',
      {
        schema: {
          tags,
          summary:
            'Upsert devices by MAC from a CSV with a header of device fields (JSON {content: base64} or multipart file), read as it arrives, up to IMPORT_BODY_LIMIT. Never deletes; writes nothing unless the whole CSV can be read.',
          response: { 200: ImportResult, 400: ErrorRef, 403: ErrorRef, 413: ErrorRef, 415: ErrorRef },
        },
      },
      async (request) => {
        const plan = await planImport(request, opts.importBodyLimit);
        // One transaction for the whole import.
        const now = new Date();
        const { inserted, updated } = await store.importDevices(plan.devices, now);
        // One change for the whole import, however many devices: a stream client gets one message.
        if (inserted.length + updated.length > 0) feed?.publish('devices', { created: inserted, updated });
        return {
          success: true as const,
          inserted: inserted.length,
          updated: updated.length,
          skipped_lines: plan.skipped.map((s) => s.line),
          skipped: plan.skipped,
          ignored_columns: plan.ignored,
          notes: plan.notes,
        };
      },
    );
  });

  app.get(
    '/events',
    {
      schema: {
        tags,
        summary:
          'Events newest first, of one device (?mac=) or of all: {success, events: [eve_* rows], count}.',
        querystring: Type.Object(
          {
            mac: Type.Optional(
              Type.String({ pattern: macPattern, description: 'Only this device (any MAC form).' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 400: ErrorRef, 403: ErrorRef },
      },
    },
    async (request, reply) => {
      const raw = request.query.mac;
      const mac = raw === undefined ? undefined : normalizeMac(raw);
      if (mac === null)
        throw badRequest(`mac '${String(raw).slice(0, 64)}' is not a MAC address.`, 'INVALID_MAC');
      const only: string | undefined = mac;
      async function* pages(): AsyncGenerator<string> {
        yield '{"success":true,"events":[';
        let cursor: EventCursor | undefined;
        let count = 0;
        do {
          const page = await store.eventsAfter(only, cursor, pageSize);
          for (const event of page.events) {
            yield `${count === 0 ? '' : ','}${JSON.stringify(event)}`;
            count++;
          }
          cursor = page.next;
        } while (cursor !== undefined);
        // Newer NetAlertX releases add the number of events; it comes last here (streamed).
        yield `],"count":${count}}`;
      }
      return reply.type('application/json; charset=utf-8').send(Readable.from(pages()));
    },
  );

  app.get(
    '/sessions/totals',
    {
      schema: {
        tags,
        summary: 'NetAlertX session totals for a period: [events, sessions, missing, voided, new, down].',
        querystring: Type.Object(
          {
            period: Type.Optional(
              stringEnum(sessionPeriods, `${sessionPeriods.join(', ')} (default 7 days).`),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Array(Type.Integer(), { minItems: 6, maxItems: 6 }),
          400: ErrorRef,
          403: ErrorRef,
        },
      },
    },
    async (request) => {
      const raw = request.query.period ?? '7 days';
      if (!sessionPeriods.includes(raw))
        throw badRequest(`period must be one of: ${sessionPeriods.join(', ')}.`, 'INVALID_PERIOD');
      const period: Period = raw === '100 years' ? 'all' : (raw as Period);
      return store.sessionTotals(periodStartDate(period, new Date()));
    },
  );

  // The path older NetAlertX releases (and dashboard widgets written for them, e.g. Homepage's
  // netalertx widget) read the totals from: the same six integers as GET /devices/totals.
  app.get(
    '/php/server/devices.php',
    {
      schema: {
        tags,
        summary: 'NetAlertX PHP path: ?action=getDevicesTotals answers the GET /devices/totals array.',
        querystring: Type.Object({ action: Type.String() }, { additionalProperties: false }),
        response: {
          200: Type.Array(Type.Integer(), { minItems: 6, maxItems: 6 }),
          400: ErrorRef,
          403: ErrorRef,
          404: ErrorRef,
        },
      },
    },
    async (request) => {
      if (request.query.action !== 'getDevicesTotals')
        throw ApiError.notFound(
          `action '${request.query.action.slice(0, 64)}' is not offered; only getDevicesTotals is (see docs/netalertx.md).`,
          'NOT_OFFERED',
        );
      return totalsArray(await devices.totals());
    },
  );

  // Deliberately not offered (docs/netalertx.md says why): a clear 404 naming the reason, after
  // authentication like every other route.
  const absent: ReadonlyArray<[string, string]> = [
    ['/dbquery', 'netkeep runs no SQL sent by a client'],
    ['/dbquery/*', 'netkeep runs no SQL sent by a client'],
    ['/settings/*', 'settings are environment variables and hold secrets; no endpoint hands them out'],
    ['/sync', "netkeep has no hub-and-node sync; each netkeep is one site's inventory"],
    ['/sync/*', "netkeep has no hub-and-node sync; each netkeep is one site's inventory"],
  ];
  for (const [url, reason] of absent) {
    app.route({
      method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      url,
      schema: { hide: true },
      handler: async (request) => {
        throw ApiError.notFound(
          `${request.url.split('?', 1)[0] ?? url} is a NetAlertX endpoint netkeep does not offer: ${reason} (see docs/netalertx.md).`,
          'NOT_OFFERED',
        );
      },
    });
  }
}

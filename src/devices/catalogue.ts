/**
 * The device field catalogue: every field of a device, listed once. The Devices table's DDL, the
 * `GET /device/new` template, request validation, the update-column allow-list, row <-> JSON
 * conversion and the OpenAPI schemas are all derived from this list. Adding a field means adding
 * one entry here with `since` set to a new schema version, and appending a migration of that
 * version with its literal `ALTER TABLE Devices ADD COLUMN` (the shape `columnDefinition` gives).
 * Released migrations never change; a test checks the migrated table matches this list.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { parseStoredJson, storableJson } from '../json-bounds.js';
import { acceptedTimePattern, dbTime, fromDbTime, toDbTime } from '../time.js';

/**
 * How a field is stored and shown:
 * - text: TEXT, JSON string
 * - flag: INTEGER 0/1, JSON 0/1 (accepts true/false too)
 * - hours: INTEGER 0..8760, JSON integer (accepts true/false too, read as 1/0)
 * - misses: INTEGER 0..100, JSON integer (0: the global setting)
 * - port: INTEGER or NULL
 * - time: TEXT `YYYY-MM-DD HH:MM:SS` UTC or NULL, JSON ISO 8601 with Z
 * - json: TEXT holding a JSON array of objects, JSON array
 */
export type FieldKind = 'text' | 'flag' | 'hours' | 'misses' | 'port' | 'time' | 'json';

/** Largest devSkipRepeated: a year of hours, as NetAlertX allows. */
export const maxHours = 8760;

/** Largest devMissesBeforeAbsent. */
export const maxMisses = 100;

export interface StoredField {
  readonly name: string;
  readonly kind: FieldKind;
  /** JSON value a new device gets when the field is not given. */
  readonly default: string | number | null | readonly unknown[];
  /** Whether POST /device/<mac> and update-column may set it. */
  readonly editable: boolean;
  readonly description: string;
  /** Schema version (migration number) that added the column. */
  readonly since: number;
}

function field(
  name: string,
  kind: FieldKind,
  defaultValue: StoredField['default'],
  description: string,
  editable = true,
  since = 1,
): StoredField {
  return { name, kind, default: defaultValue, editable, description, since };
}

/** Stored fields, in NetAlertX's Devices table order. devMac is the key. */
export const storedFields: readonly StoredField[] = [
  field('devMac', 'text', '', 'MAC address, canonical form aa:bb:cc:dd:ee:ff (the key).', false),
  field('devName', 'text', '(unknown)', 'Device name.'),
  field('devOwner', 'text', '', 'Owner name.'),
  field('devType', 'text', '', 'Device type (Phone, Laptop, Router, ...).'),
  field('devVendor', 'text', '', 'Vendor name, usually from the OUI database.'),
  field('devFavorite', 'flag', 0, 'Marked as favourite.'),
  field('devGroup', 'text', '', 'Group name.'),
  field('devComments', 'text', '', 'Free-text comments.'),
  field('devFirstConnection', 'time', null, 'When the device was first seen.'),
  field('devLastConnection', 'time', null, 'When the device was last seen.'),
  field('devLastIP', 'text', '', 'Last IP address seen.'),
  field('devStaticIP', 'flag', 0, 'The device has a static IP address.'),
  field('devScan', 'flag', 1, 'Presence scanning watches this device.'),
  field('devLogEvents', 'flag', 1, 'Log connection events.'),
  field('devAlertEvents', 'flag', 1, 'Alert on events.'),
  field('devAlertDown', 'flag', 0, 'Alert when the device goes down (absent counts as Down).'),
  field(
    'devSkipRepeated',
    'hours',
    0,
    'Hours after a sent notification during which more notifications of the device are skipped (0 off, max 8760).',
  ),
  field('devLastNotification', 'time', null, 'When the last notification was sent.'),
  field('devPresentLastScan', 'flag', 0, 'The device was present in the last scan.'),
  field('devIsNew', 'flag', 1, 'Newly discovered, not yet reviewed.'),
  field('devLocation', 'text', '', 'Location (room, rack, ...).'),
  field('devIsArchived', 'flag', 0, 'Archived: kept but records no events.'),
  field('devParentMAC', 'text', '', 'MAC of the parent device (network node).'),
  field('devParentPort', 'port', null, 'Port on the parent device.'),
  field('devParentRelType', 'text', 'default', "Relation to the parent, e.g. 'default' or 'nic'."),
  field('devReqNicsOnline', 'flag', 0, 'Status requires all NIC children to be on-line.'),
  field('devIcon', 'text', '', 'Icon name or base64 SVG.'),
  field('devGUID', 'text', '', 'Unique id; a fresh UUID on create and on copy.', false),
  field('devSite', 'text', '', 'Site name.'),
  field('devSSID', 'text', '', 'Wi-Fi network name.'),
  field('devSyncHubNode', 'text', '', 'Sync hub node name.'),
  field('devSourcePlugin', 'text', '', 'Plugin or scanner that discovered the device.'),
  field('devCustomProps', 'json', [], 'Custom properties: a JSON array of objects.'),
  field('devFQDN', 'text', '', 'Fully qualified domain name.'),
  field(
    'devCanSleep',
    'flag',
    0,
    'The device may sleep: unseen, it stays present (sleeping) for SLEEP_MINUTES after its last sighting, with no Disconnected or Device Down.',
    true,
    7,
  ),
  field(
    'devMissesBeforeAbsent',
    'misses',
    0,
    'Consecutive scan cycles the device may be missed before it counts as gone (0: SCAN_MISSES_BEFORE_ABSENT, else 1-100).',
    true,
    7,
  ),
  field(
    'devPrimaryIPv6',
    'text',
    '',
    'IPv6 address seen by the scanner: global unicast, else unique-local, else link-local; empty when none.',
    false,
    7,
  ),
  field(
    'devNameSource',
    'text',
    '',
    "Where devName came from: user (the API or console), import (a database import), dhcp, mdns, netbios, dns (automatic naming), or '' (no name). Set by netkeep; read-only.",
    false,
    8,
  ),
  field(
    'devWatchPorts',
    'flag',
    0,
    'The port watch scans this device (nmap -F every PORT_WATCH_MINUTES) and reports opened and closed ports.',
    true,
    9,
  ),
];

/**
 * devNameSource for a devName written by a person (source `user`) or a database import
 * (`import`): '' when the name written is no name ('' or the default '(unknown)'), so that the
 * device can be named automatically again.
 */
export function nameSourceOf(devName: unknown, source: 'user' | 'import'): string {
  return devName === '' || devName === '(unknown)' ? '' : source;
}

/** `columns` plus the devNameSource their devName implies (unchanged when devName is not among them). */
export function withNameSource<T extends Record<string, unknown>>(columns: T, source: 'user' | 'import'): T {
  if (!Object.hasOwn(columns, 'devName')) return columns;
  return { ...columns, devNameSource: nameSourceOf(columns.devName, source) };
}

/** Fields computed on GET, never stored; a client may echo them back and they are ignored. */
export const computedFields = {
  devStatus: {
    schema: Type.Union([Type.Literal('On-line'), Type.Literal('Off-line'), Type.Literal('Down')]),
    description:
      'Down when devAlertDown is set and the device was absent from the last scan; On-line when present; else Off-line.',
  },
  devRandomMac: {
    schema: Type.Integer({ minimum: 0, maximum: 1 }),
    description:
      'devMac is a random ("private") MAC: 1 when its locally administered bit (0x02 of the first octet) is set.',
  },
  devMacs: {
    schema: Type.Array(Type.String()),
    description:
      'Every MAC of the device: devMac first, then its aliases (merged or linked MACs) in MAC order.',
  },
  devSessions: {
    schema: Type.Integer(),
    description: 'Sessions overlapping the period (open sessions always count).',
  },
  devEvents: {
    schema: Type.Integer(),
    description: 'Events in the period other than Connected/Disconnected.',
  },
  devDownAlerts: { schema: Type.Integer(), description: "'Device Down' events in the period." },
  devPresenceHours: { schema: Type.Number(), description: 'Hours connected within the period, 2 decimals.' },
  devSleeping: {
    schema: Type.Integer({ minimum: 0, maximum: 1 }),
    description:
      '1 while a device with devCanSleep is unseen but within SLEEP_MINUTES of its last sighting (still present, On-line).',
  },
  devFlapping: {
    schema: Type.Integer({ minimum: 0, maximum: 1 }),
    description:
      '1 while the device has at least FLAP_THRESHOLD Connected/Disconnected/Device Down/Down Reconnected events within FLAP_WINDOW_MINUTES (re-evaluated each scan cycle).',
  },
  devChildrenDynamic: {
    schema: Type.Array(Type.Ref('DeviceChild')),
    description: 'Devices whose devParentMAC is this device.',
  },
  devChildrenNicsDynamic: {
    schema: Type.Array(Type.Ref('DeviceChild')),
    description: "The children whose devParentRelType is 'nic'.",
  },
} as const satisfies Record<string, { schema: TSchema; description: string }>;

export const fieldsByName: ReadonlyMap<string, StoredField> = new Map(storedFields.map((f) => [f.name, f]));
export const editableFields: readonly StoredField[] = storedFields.filter((f) => f.editable);
/**
 * The editable fields a bulk edit (`POST /devices/bulk`) may set on many devices at once: those
 * that describe where a device belongs and how it is watched. Names, addresses, times, comments and
 * custom properties are one device's own and are edited one device at a time.
 */
export const bulkFieldNames: readonly string[] = [
  'devOwner',
  'devType',
  'devGroup',
  'devLocation',
  'devSite',
  'devIcon',
  'devFavorite',
  'devIsNew',
  'devIsArchived',
  'devAlertEvents',
  'devAlertDown',
  'devSkipRepeated',
  'devScan',
  'devLogEvents',
  'devCanSleep',
  'devWatchPorts',
  'devParentMAC',
  'devParentPort',
  'devParentRelType',
];

/**
 * Names a client may send back from a GET; they are accepted and ignored on writes: the computed
 * fields and the stored fields only the server sets (devGUID, the scanner's devPrimaryIPv6).
 */
export const ignoredOnWrite: ReadonlySet<string> = new Set([
  ...Object.keys(computedFields),
  ...storedFields.filter((f) => !f.editable && f.name !== 'devMac').map((f) => f.name),
]);

// ---------------------------------------------------------------------------------------------
// DDL

const sqlTypes: Record<FieldKind, string> = {
  text: "TEXT NOT NULL DEFAULT ''",
  flag: 'INTEGER NOT NULL DEFAULT 0',
  hours: 'INTEGER NOT NULL DEFAULT 0',
  misses: 'INTEGER NOT NULL DEFAULT 0',
  port: 'INTEGER',
  time: 'TEXT',
  json: "TEXT NOT NULL DEFAULT '[]'",
};

/**
 * The column definition a field's kind calls for. Migrations are literal SQL (never generated from
 * this list, which changes); test/db/migrations.test.ts checks the migrated table against it.
 */
export function columnDefinition(f: StoredField): string {
  if (f.name === 'devMac') return 'devMac TEXT PRIMARY KEY NOT NULL';
  const check =
    f.kind === 'flag'
      ? ` CHECK (${f.name} IN (0, 1))`
      : f.kind === 'hours'
        ? ` CHECK (${f.name} BETWEEN 0 AND ${maxHours})`
        : f.kind === 'misses'
          ? ` CHECK (${f.name} BETWEEN 0 AND ${maxMisses})`
          : '';
  return `${f.name} ${sqlTypes[f.kind]}${check}`;
}

// ---------------------------------------------------------------------------------------------
// JSON schemas (TypeBox): for Fastify validation and the OpenAPI document

function outputSchema(f: StoredField): TSchema {
  const options = { description: f.description };
  switch (f.kind) {
    case 'text':
      return Type.String(options);
    case 'flag':
      return Type.Integer({ ...options, minimum: 0, maximum: 1 });
    case 'hours':
      return Type.Integer({ ...options, minimum: 0, maximum: maxHours });
    case 'misses':
      return Type.Integer({ ...options, minimum: 0, maximum: maxMisses });
    case 'port':
      return Type.Union([Type.Integer(), Type.Null()], options);
    case 'time':
      return Type.Union([Type.String({ format: 'date-time' }), Type.Null()], options);
    case 'json':
      return Type.Array(Type.Object({}, { additionalProperties: true }), options);
  }
}

/** Longest string accepted for a text field (devIcon may hold an SVG). */
export const maxTextLength = 16_384;

function inputSchema(f: StoredField): TSchema {
  const options = { description: f.description };
  switch (f.kind) {
    case 'text':
      return Type.String({ ...options, maxLength: maxTextLength });
    case 'flag':
      return Type.Union([Type.Literal(0), Type.Literal(1), Type.Boolean()], options);
    case 'hours':
      return Type.Union([Type.Integer({ minimum: 0, maximum: maxHours }), Type.Boolean()], options);
    case 'misses':
      return Type.Integer({ ...options, minimum: 0, maximum: maxMisses });
    case 'port':
      return Type.Union([Type.Integer({ minimum: 0, maximum: 65535 }), Type.Null()], options);
    case 'time':
      return Type.Union([Type.String({ maxLength: 64, pattern: acceptedTimePattern }), Type.Null()], options);
    case 'json':
      return Type.Array(Type.Object({}, { additionalProperties: true }), { ...options, maxItems: 1000 });
  }
}

export const DeviceChildSchema = Type.Object(
  {
    devMac: Type.String(),
    devName: Type.String(),
    devStatus: computedFields.devStatus.schema,
    devParentRelType: Type.String(),
    devParentPort: Type.Union([Type.Integer(), Type.Null()]),
    devLastIP: Type.String(),
  },
  { $id: 'DeviceChild', description: 'A child device (devParentMAC is the parent).' },
);

/** A device as returned by GET /device/<mac> and GET /device/new. */
export const DeviceSchema = Type.Object(
  {
    ...Object.fromEntries(storedFields.map((f) => [f.name, outputSchema(f)])),
    ...Object.fromEntries(
      Object.entries(computedFields).map(([name, c]) => [name, { ...c.schema, description: c.description }]),
    ),
  },
  { $id: 'Device', additionalProperties: false },
);

/**
 * A device as GET /devices lists it: the stored fields, devStatus, devRandomMac, devSleeping and
 * devFlapping. The per-device counts and children are left out on purpose: they cost a few queries
 * per device, i.e. thousands per page.
 */
export const DeviceListItemSchema = Type.Object(
  {
    ...Object.fromEntries(storedFields.map((f) => [f.name, outputSchema(f)])),
    ...Object.fromEntries(
      (['devStatus', 'devRandomMac', 'devSleeping', 'devFlapping'] as const).map((name) => [
        name,
        { ...computedFields[name].schema, description: computedFields[name].description },
      ]),
    ),
  },
  { $id: 'DeviceListItem', additionalProperties: false },
);

/**
 * What the console's network map draws of each device (GET /devices/map): a few fields of the list
 * item, so that the map of 10,000 devices is ~1.5 MB instead of the whole list's ~9 MB.
 */
export const mapFieldNames = [
  'devMac',
  'devName',
  'devStatus',
  'devParentMAC',
  'devParentPort',
  'devSite',
  'devType',
] as const;

export const DeviceMapItemSchema = Type.Pick(DeviceListItemSchema, [...mapFieldNames], {
  $id: 'DeviceMapItem',
  additionalProperties: false,
});

/** The `changes` of a bulk edit: any of `bulkFieldNames`, with the single edit's input rules. */
export const BulkChangesSchema = Type.Object(
  Object.fromEntries(
    bulkFieldNames.map((name) => {
      const f = fieldsByName.get(name);
      if (f?.editable !== true) throw new Error(`bulk field ${name} is not an editable field`);
      return [name, Type.Optional(inputSchema(f))];
    }),
  ),
  { additionalProperties: false, minProperties: 1 },
);

/**
 * Body of POST /device/<mac>: any editable field, `createNew`, and the read-only fields a client may
 * echo back from a GET (ignored). Anything else is rejected as an unknown field.
 */
export const DeviceWriteSchema = Type.Object(
  {
    ...Object.fromEntries(editableFields.map((f) => [f.name, Type.Optional(inputSchema(f))])),
    devMac: Type.Optional(
      Type.String({ maxLength: 64, description: 'Ignored when equal to the MAC in the path.' }),
    ),
    ...Object.fromEntries(
      [...ignoredOnWrite].map((name) => [
        name,
        Type.Optional(Type.Unknown({ description: 'Read-only; ignored.' })),
      ]),
    ),
    createNew: Type.Optional(Type.Boolean({ description: 'true: create the device (409 if it exists).' })),
  },
  { additionalProperties: false },
);

/** Validates one value for update-column; returns the schema of the named editable field. */
export function editableInputSchema(name: string): TSchema | undefined {
  const f = fieldsByName.get(name);
  return f?.editable ? inputSchema(f) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Conversion between JSON values and SQLite columns

export type DbValue = string | number | null;
export type DeviceRow = Record<string, DbValue>;
export type DeviceJson = Record<string, unknown>;

/**
 * A field's value in storage-neutral form, as the device store accepts it: text, 0/1 flags and
 * ports as numbers, times as Date values (whole seconds), devCustomProps as its array, or null.
 */
export type FieldValue = string | number | Date | null | readonly Readonly<Record<string, unknown>>[];

/**
 * One already-validated JSON value as a field value. Throws RangeError on a bad time and on JSON
 * nested too deep or too large to store (so every stored value can be serialised again on read).
 */
export function toFieldValue(f: StoredField, value: unknown): FieldValue {
  switch (f.kind) {
    case 'text':
      return value as string;
    case 'flag':
      return value === true || value === 1 ? 1 : 0;
    case 'hours':
      return typeof value === 'boolean' ? Number(value) : (value as number);
    case 'misses':
      return value as number;
    case 'port':
      return value as number | null;
    case 'time':
      // toDbTime validates the text and drops sub-second digits, as storage does.
      return value === null ? null : new Date(fromDbTime(toDbTime(value as string)));
    case 'json':
      storableJson(value); // throws past the bounds
      return value as readonly Readonly<Record<string, unknown>>[];
  }
}

/** A field value as its SQLite column value. */
export function fieldValueToColumn(f: StoredField, value: FieldValue): DbValue {
  if (value === null) return null;
  if (value instanceof Date) return dbTime(value);
  if (typeof value === 'object') return JSON.stringify(value);
  return value;
}

/** Converts one already-validated JSON value to its column value. Throws RangeError on a bad time. */
export function toColumn(f: StoredField, value: unknown): DbValue {
  return fieldValueToColumn(f, toFieldValue(f, value));
}

/** A validated JSON device as column values; stored fields it does not hold are left out. */
export function jsonToColumns(json: DeviceJson): DeviceRow {
  const row: DeviceRow = {};
  for (const f of storedFields) if (Object.hasOwn(json, f.name)) row[f.name] = toColumn(f, json[f.name]);
  return row;
}

export function fromColumn(f: StoredField, value: DbValue): unknown {
  switch (f.kind) {
    case 'time':
      return value === null ? null : fromDbTime(value as string);
    case 'json':
      // Never throws: a value too deep to serialise (e.g. written by the sqlite3 CLI) stays readable.
      return parseStoredJson(value as string);
    default:
      return value;
  }
}

/** A stored row as the JSON object clients see (without computed fields). */
export function rowToJson(row: DeviceRow): DeviceJson {
  const json: DeviceJson = {};
  for (const f of storedFields) json[f.name] = fromColumn(f, row[f.name] ?? null);
  return json;
}

/** The defaults of every stored field as a JSON device (devMac empty). */
export function defaultDeviceJson(): DeviceJson {
  return Object.fromEntries(
    storedFields.map((f) => [f.name, Array.isArray(f.default) ? [...(f.default as unknown[])] : f.default]),
  );
}

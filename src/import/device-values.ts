/**
 * One source Devices row → catalogue column values, each checked by the catalogue's rules. A value
 * that breaks a rule is not guessed at: the field takes its default and a note says which value was
 * refused and why. Only a row whose MAC is not a MAC is refused as a whole (it has no key).
 */
import {
  fieldsByName,
  maxTextLength,
  toColumn,
  type DbValue,
  type StoredField,
} from '../devices/catalogue.js';
import { storableJson } from '../json-bounds.js';
import { normalizeMac } from '../validation.js';
import type { LocalTimeReader } from './local-time.js';
import type { ColumnMap } from '../store/sqlite/import/source.js';

/** devSkipRepeated is a number of hours, 0 (off) to a year. */
export const maxSkipRepeatedHours = 8760;

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type SourceValue = string | number | bigint | Buffer | null;

/** Characters of a source value a message shows (the value itself may be megabytes). */
const shownCharacters = 64;

/** A source text as a message shows it: its start, and how long it was when cut. */
export function shown(text: string): string {
  return text.length > shownCharacters
    ? `${text.slice(0, shownCharacters)}... (${text.length} characters)`
    : text;
}

export type DeviceConversion =
  | {
      readonly ok: true;
      readonly mac: string;
      /** Only the fields the source has (and that passed their rules). */
      readonly columns: Record<string, DbValue>;
      /** One sentence per refused value. */
      readonly notes: string[];
    }
  | { readonly ok: false; readonly reason: string };

/** Text of a source value; undefined for NULL and for binary values. */
function asText(value: SourceValue): string | undefined {
  if (value === null || Buffer.isBuffer(value)) return undefined;
  return String(value);
}

function asInteger(value: SourceValue): number | undefined {
  const text = asText(value)?.trim();
  if (text === undefined || !/^-?[0-9]{1,15}$/.test(text)) return undefined;
  return Number(text);
}

/**
 * devCustomProps: a JSON array of objects, possibly base64-encoded as NetAlertX's UI saves it,
 * within the bounds every stored JSON value keeps (json-bounds.ts). Returns the text to store, or
 * why the value is refused.
 */
function customProps(text: string): { json: string } | { refused: string } {
  const parse = (candidate: string): { json: string } | { refused: string } | undefined => {
    let value: unknown;
    try {
      value = JSON.parse(candidate);
    } catch {
      return undefined; // not JSON
    }
    if (
      !Array.isArray(value) ||
      !value.every((v) => typeof v === 'object' && v !== null && !Array.isArray(v))
    )
      return undefined;
    try {
      return { json: storableJson(value) };
    } catch (err) {
      if (err instanceof RangeError) return { refused: err.message };
      throw err;
    }
  };
  return (
    parse(text) ??
    (/^[A-Za-z0-9+/=\s]+$/.test(text) ? parse(Buffer.from(text, 'base64').toString('utf8')) : undefined) ?? {
      refused: 'expected a JSON array of objects',
    }
  );
}

type Checked = { value: DbValue } | { refused: string };

/** One value by its field's rules; `undefined` means "not set in the source": keep the default. */
function checkValue(f: StoredField, raw: SourceValue, reader: LocalTimeReader): Checked | undefined {
  const text = asText(raw);
  if (f.name === 'devSkipRepeated') {
    if (text === undefined || text.trim() === '') return undefined;
    const hours = asInteger(raw);
    if (hours === undefined || hours < 0)
      return { refused: `expected a whole number of hours from 0 to ${maxSkipRepeatedHours}` };
    const clamped = Math.min(hours, maxSkipRepeatedHours);
    // Until the catalogue stores hours, the column takes 0/1: any number of hours means "skip".
    return { value: f.kind === 'flag' ? Math.min(clamped, 1) : clamped };
  }
  if (f.name === 'devGUID') {
    if (text === undefined || text.trim() === '') return undefined;
    return uuid.test(text.trim())
      ? { value: text.trim().toLowerCase() }
      : { refused: 'not a UUID; a fresh one is given' };
  }
  switch (f.kind) {
    case 'text':
      if (text === undefined) return undefined;
      if (text.length > maxTextLength) return { refused: `longer than ${maxTextLength} characters` };
      // devParentMAC links to another device by MAC: store it in devMac's form (other text, such as
      // NetAlertX's root node 'Internet', is kept as written).
      return { value: f.name === 'devParentMAC' ? (normalizeMac(text.trim()) ?? text) : text };
    case 'flag': {
      if (text === undefined || text.trim() === '') return undefined;
      const lowered = text.trim().toLowerCase();
      if (lowered === 'true') return { value: 1 };
      if (lowered === 'false') return { value: 0 };
      const n = asInteger(raw);
      if (n === 0 || n === 1) return { value: n };
      // Pi.Alert's dev_ScanCycle numbers the scan cycle that watches the device; 0 means none.
      if (f.name === 'devScan' && n !== undefined && n > 1) return { value: 1 };
      return { refused: 'expected 0 or 1' };
    }
    case 'port': {
      if (text === undefined || text.trim() === '') return { value: null };
      const n = asInteger(raw);
      return n !== undefined && n >= 0 && n <= 65535
        ? { value: n }
        : { refused: 'expected a port from 0 to 65535' };
    }
    case 'time': {
      if (text === undefined || text.trim() === '') return { value: null };
      const utc = reader.toUtc(text);
      return utc === null ? { refused: 'not a date-time' } : { value: utc };
    }
    case 'json': {
      if (text === undefined || text.trim() === '') return undefined;
      const props = customProps(text.trim());
      return 'json' in props ? { value: props.json } : props;
    }
    default:
      return { value: toColumn(f, raw) };
  }
}

/** Converts one source Devices row, read with the source's column names. */
export function convertDevice(
  row: Readonly<Record<string, SourceValue>>,
  columns: ColumnMap,
  reader: LocalTimeReader,
): DeviceConversion {
  const result: Record<string, DbValue> = {};
  const notes: string[] = [];
  let mac: string | null = null;
  for (const [sourceColumn, fieldName] of columns) {
    const raw = row[sourceColumn] ?? null;
    if (fieldName === 'devMac') {
      const text = asText(raw)?.trim() ?? '';
      mac = normalizeMac(text);
      if (mac === null) return { ok: false, reason: `'${shown(text)}' is not a MAC address` };
      continue;
    }
    const f = fieldsByName.get(fieldName);
    if (f === undefined) continue;
    const checked = checkValue(f, raw, reader);
    if (checked === undefined) continue;
    if ('refused' in checked) {
      const value = asText(raw) ?? '(binary)';
      notes.push(`${fieldName} '${shown(value)}' refused (${checked.refused}); default kept`);
      continue;
    }
    result[fieldName] = checked.value;
  }
  if (mac === null) return { ok: false, reason: 'no MAC column' };
  return { ok: true, mac, columns: result, notes };
}

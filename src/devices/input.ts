/**
 * Client JSON → the store's field values (times as Date values), for POST /device/<mac> and update-column. The body's JSON
 * types were already checked by the route's schema (derived from the catalogue); what is left here
 * is what a JSON schema cannot say: time text that is not a real date-time, a devMac that names
 * another device, and the canonical form of devParentMAC. Every failure is a 400 naming the field.
 */
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import type { TSchema } from '@sinclair/typebox';
import { DomainError } from '../errors.js';
import { maxJsonChars, maxJsonDepth } from '../json-bounds.js';
import { normalizeMac } from '../validation.js';
import {
  editableFields,
  editableInputSchema,
  fieldsByName,
  maxHours,
  maxMisses,
  maxTextLength,
  toFieldValue,
  type FieldKind,
  type StoredField,
} from './catalogue.js';
import type { DeviceChanges, DeviceValue } from '../store/devices.js';

/** What each kind accepts, in words, for error messages. */
const expected: Record<FieldKind, string> = {
  text: `a string of at most ${maxTextLength} characters`,
  flag: '0, 1, true or false',
  hours: `a whole number of hours from 0 to ${maxHours}, or true/false (1/0)`,
  misses: `a whole number from 0 to ${maxMisses} (0: the global setting)`,
  port: 'an integer from 0 to 65535, or null',
  time: 'an ISO 8601 date-time string, or null',
  json: `an array of objects, nested at most ${maxJsonDepth} levels and at most ${maxJsonChars} characters of JSON`,
};

/** Compiled once: the catalogue's input schema of every editable field. */
const checks: ReadonlyMap<string, TypeCheck<TSchema>> = new Map(
  editableFields.map((f) => {
    const schema = editableInputSchema(f.name);
    if (schema === undefined) throw new Error(`no input schema for ${f.name}`);
    return [f.name, TypeCompiler.Compile(schema)];
  }),
);

/** One already type-checked value as a field value; a bad time text is a 400 naming the field. */
function columnValue(f: StoredField, value: unknown): DeviceValue {
  // devParentMAC links to another device by MAC, so store it in the form devMac has; other text
  // (e.g. NetAlertX's root node 'Internet') is kept as given.
  if (f.name === 'devParentMAC' && typeof value === 'string') return normalizeMac(value) ?? value;
  try {
    return toFieldValue(f, value);
  } catch (err) {
    if (err instanceof RangeError)
      throw new DomainError(
        'invalid',
        `Invalid field '${f.name}': ${err.message}; expected ${expected[f.kind]}.`,
        { code: 'INVALID_FIELD' },
      );
    throw err;
  }
}

export interface DeviceWrite {
  readonly createNew: boolean;
  readonly changes: DeviceChanges;
}

/**
 * The changes a POST /device/<mac> body asks for. Read-only fields a client echoes back from a GET
 * (computed ones, devGUID, a devMac equal to the path's) are dropped; a devMac naming another
 * device is a 400.
 */
export function deviceWrite(body: Readonly<Record<string, unknown>>, pathMac: string): DeviceWrite {
  const changes: Record<string, DeviceValue> = {};
  for (const [name, value] of Object.entries(body)) {
    if (name === 'devMac') {
      if (typeof value !== 'string' || normalizeMac(value) !== pathMac)
        throw new DomainError(
          'invalid',
          `Field 'devMac' (${JSON.stringify(value)}) differs from the MAC in the path (${pathMac}); use POST /device/copy to copy a device.`,
          { code: 'MAC_MISMATCH' },
        );
      continue;
    }
    const f = fieldsByName.get(name);
    if (f?.editable !== true) continue; // createNew and the read-only fields the schema allows
    changes[name] = columnValue(f, value);
  }
  return { createNew: body.createNew === true, changes };
}

/** update-column: the column must be editable and the value must fit the field's schema. */
export function columnWrite(columnName: string, value: unknown): { column: string; value: DeviceValue } {
  const f = fieldsByName.get(columnName);
  const check = checks.get(columnName);
  if (f === undefined || check === undefined) {
    throw new DomainError(
      'invalid',
      `columnName '${columnName}' is not an editable device field; allowed: ${editableFields.map((e) => e.name).join(', ')}.`,
      { code: 'UNKNOWN_COLUMN' },
    );
  }
  if (!check.Check(value))
    throw new DomainError(
      'invalid',
      `Invalid columnValue for '${columnName}': expected ${expected[f.kind]}.`,
      {
        code: 'INVALID_COLUMN_VALUE',
      },
    );
  return { column: f.name, value: columnValue(f, value) };
}

/**
 * TypeBox helpers shared by the route schemas of every feature, for parameters whose rule a handler
 * used to check by hand: the schema then carries the rule (so the published OpenAPI shows it and
 * Ajv enforces it), and the error code and words of the old check are registered here, so that
 * src/http/errors.ts answers a broken rule as the handler did (INVALID_NOTIFICATION_STATUS, not a
 * generic VALIDATION_FAILED).
 */
import { Type } from '@sinclair/typebox';

/** Error code of each registered list of values, keyed by the list. */
const enumCodes = new Map<string, string>();
/** Error code and words of each registered pattern. */
const patternRules = new Map<string, { readonly code: string; readonly rule: string }>();

const listKey = (values: readonly unknown[]): string => JSON.stringify(values);

/**
 * A string schema that only accepts the given values (one `enum`: clear errors, and OpenAPI shows
 * them). `code`: the error code of a value outside the list, where the parameter's name does not
 * give it (src/http/errors.ts).
 */
export function stringEnum<const T extends string>(values: readonly T[], description: string, code?: string) {
  if (code !== undefined) enumCodes.set(listKey(values), code);
  return Type.Unsafe<T>({ type: 'string', enum: [...values], description });
}

/**
 * A string schema with a pattern whose breach is answered with `code` and "<name> <rule>", e.g.
 * `rule` "must be a comma-separated list of: ...".
 */
export function stringPattern(pattern: string, description: string, words: { code: string; rule: string }) {
  patternRules.set(pattern, words);
  return Type.String({ pattern, description });
}

/** The registered code of a list of values (an enum's `allowedValues`), if any. */
export function enumCode(values: readonly unknown[]): string | undefined {
  return enumCodes.get(listKey(values));
}

/** The registered code and words of a pattern, if any. */
export function patternWords(pattern: string): { readonly code: string; readonly rule: string } | undefined {
  return patternRules.get(pattern);
}

/**
 * Bounds of the JSON values netkeep stores (devCustomProps). A value nested thousands of levels
 * deep is small on the wire but overflows the stack of a recursive serialiser, so writes are
 * bounded in depth and size, and reads check stored text (which the sqlite3 CLI or an old version
 * may have written) before parsing it. Both checks are iterative: they cannot overflow themselves.
 */

/** Deepest nesting of arrays and objects accepted (the outer array is level 1). */
export const maxJsonDepth = 32;
/** Longest stored JSON text, in characters. */
export const maxJsonChars = 65_536;

/** The nesting depth of a parsed JSON value, walked without recursion; stops past `limit`. */
export function valueDepth(value: unknown, limit = maxJsonDepth): number {
  let deepest = 0;
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 1 }];
  while (stack.length > 0) {
    const next = stack.pop();
    if (next === undefined || typeof next.value !== 'object' || next.value === null) continue;
    deepest = Math.max(deepest, next.depth);
    if (deepest > limit) return deepest;
    for (const child of Object.values(next.value)) stack.push({ value: child, depth: next.depth + 1 });
  }
  return deepest;
}

/** The nesting depth of JSON text, counted on brackets outside strings (the text is not parsed). */
export function textDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) deepest = Math.max(deepest, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

/**
 * Stored JSON as a value, never throwing: text that is not JSON, too deep or too large to serialise
 * safely comes back as `[{"unreadable": "<the stored text, cut to maxJsonChars>"}]` (an array of
 * objects, as devCustomProps is), so the record stays readable and the operator can see and fix it.
 */
export function parseStoredJson(text: string): unknown {
  if (text.length <= maxJsonChars && textDepth(text) <= maxJsonDepth) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // falls through to the readable form
    }
  }
  return [{ unreadable: text.slice(0, maxJsonChars) }];
}

/**
 * The stored text of a JSON value, or a RangeError naming the bound it breaks (the caller names the
 * field).
 */
export function storableJson(value: unknown): string {
  const depth = valueDepth(value);
  if (depth > maxJsonDepth)
    throw new RangeError(`nested more than ${maxJsonDepth} levels deep (at most ${maxJsonDepth} allowed)`);
  const text = JSON.stringify(value);
  if (text.length > maxJsonChars)
    throw new RangeError(`${text.length} characters of JSON (at most ${maxJsonChars} allowed)`);
  return text;
}

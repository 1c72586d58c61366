/**
 * The body of POST /devices/import, read as it arrives: the CSV bytes of a multipart part named
 * `file` (NetAlertX's UI uploads its devices CSV so) or of a JSON `{"content": "<base64>"}`. Neither
 * form is ever held whole: each chunk is taken apart and handed on (the multipart reader keeps the
 * last few bytes that may start a boundary, the JSON reader the base64 characters of less than one
 * decoded chunk), so the import holds what it parsed, never the body.
 *
 * The request stream is read without being destroyed when reading stops early (an error, the
 * limit): the answer then goes out and the connection closes (src/http/connection.ts).
 */
import type { Readable } from 'node:stream';
import { DomainError } from '../errors.js';

function invalid(message: string, code = 'IMPORT_BODY_INVALID'): DomainError {
  return new DomainError('invalid', message, { code });
}

/**
 * The request's chunks; `tooLarge()` is thrown as soon as they pass `limit` bytes (at once when
 * Content-Length says they will).
 */
export async function* limitedChunks(
  body: Readable,
  limit: number,
  contentLength: string | undefined,
  tooLarge: () => Error,
): AsyncGenerator<Buffer> {
  if (contentLength !== undefined && Number(contentLength) > limit) throw tooLarge();
  let total = 0;
  for await (const chunk of body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > limit) throw tooLarge();
    yield chunk;
  }
}

/** The boundary parameter of a multipart Content-Type, or undefined. */
function boundaryOf(contentType: string): string | undefined {
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

/** Part headers (and a preamble) longer than this are not a form upload. */
const maxPartHead = 16 * 1024;

/**
 * The content of the first part named `name` of a multipart/form-data body (RFC 7578), chunk by
 * chunk as it arrives; the rest of the body is read and dropped. 400 when there is no such part.
 */
export async function* multipartPart(
  chunks: AsyncIterable<Buffer>,
  contentType: string,
  name: string,
): AsyncGenerator<Buffer> {
  const boundary = boundaryOf(contentType);
  if (boundary === undefined) throw invalid('The multipart Content-Type has no boundary parameter.');
  const first = Buffer.from(`--${boundary}`);
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  const missing = `The multipart body has no part named '${name}'.`;
  let state: 'preamble' | 'head' | 'content' | 'skip' | 'done' = 'preamble';
  let pending: Buffer = Buffer.alloc(0);
  /** Keeps the last `keep` bytes (a copy: the chunk they came from is released). */
  const keepTail = (keep: number): void => {
    pending = Buffer.from(pending.subarray(Math.max(0, pending.length - keep)));
  };
  for await (const chunk of chunks) {
    if (state === 'done') continue; // the epilogue and any later parts: read, dropped
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    for (;;) {
      if (state === 'preamble') {
        const at = pending.indexOf(first);
        if (at < 0) {
          if (pending.length > maxPartHead) throw invalid(missing);
          keepTail(first.length - 1);
          break;
        }
        pending = pending.subarray(at + first.length);
        state = 'head';
      } else if (state === 'head') {
        if (pending.length < 2) break;
        if (pending[0] === 0x2d && pending[1] === 0x2d) throw invalid(missing); // the closing delimiter
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) {
          if (pending.length > maxPartHead) throw invalid('A multipart part has headers longer than 16 KiB.');
          break;
        }
        const headers = pending.subarray(0, end).toString('latin1');
        const disposition = /content-disposition:\s*form-data;([^\r\n]*)/i.exec(headers)?.[1] ?? '';
        state = /(?:^|;)\s*name="([^"]*)"/i.exec(disposition)?.[1] === name ? 'content' : 'skip';
        pending = pending.subarray(end + 4);
      } else {
        // A part's content ends with the CRLF that precedes the next delimiter.
        const at = pending.indexOf(delimiter);
        if (at < 0) {
          const keep = Math.min(pending.length, delimiter.length - 1);
          if (state === 'content' && pending.length > keep) yield pending.subarray(0, pending.length - keep);
          keepTail(keep);
          break;
        }
        if (state === 'content') {
          if (at > 0) yield pending.subarray(0, at);
          state = 'done';
          pending = Buffer.alloc(0);
          break;
        }
        pending = pending.subarray(at + delimiter.length);
        state = 'head';
      }
    }
  }
  if (state !== 'done')
    throw invalid(state === 'content' ? `The multipart body ends inside the part '${name}'.` : missing);
}

const shape = 'The body is {"content": "<base64 CSV>"} or a multipart part named \'file\'.';
const notJson = (): DomainError => invalid('The request body is not valid JSON.', 'INVALID_JSON');
const notBase64 = (): DomainError => invalid("Field 'content' is not base64.");
/** Base64 characters decoded at a time (a multiple of 4). */
const decodeBatch = 256 * 1024;
const jsonSpace = /^[ \t\r\n]$/;
/** Where a JSON string's run of plain characters stops: its closing quote or an escape. */
const stringStop = /["\\]/g;

/**
 * The bytes of the base64 string `content` of a JSON body `{"content": "..."}` (no other field),
 * decoded as they arrive. The JSON is read by hand, for this one shape: a general parser would need
 * the whole text. Whitespace inside the base64 (also as the escapes \n, \r, \t) is ignored, as
 * `base64` wraps its lines; padding may only end it.
 */
export async function* jsonBase64Content(chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let state: 'start' | 'key' | 'colon' | 'value' | 'string' | 'after' | 'next' | 'end' = 'start';
  let carry = '';
  let key = '';
  let seenContent = false;
  let base64 = '';
  let total = 0;
  let padding = 0;
  const take = (segment: string): void => {
    if (segment.length === 0) return;
    if (/[^A-Za-z0-9+/=]/.test(segment)) throw notBase64();
    const pad = padding > 0 ? 0 : segment.indexOf('=');
    if (padding > 0 || pad >= 0) {
      const tail = padding > 0 ? segment : segment.slice(pad);
      if (!/^=*$/.test(tail)) throw notBase64();
      padding += tail.length;
      if (padding > 2) throw notBase64();
    }
    base64 += segment;
    total += segment.length;
  };
  for await (const chunk of chunks) {
    const text = carry + chunk.toString('latin1');
    carry = '';
    const batches: Buffer[] = [];
    let i = 0;
    while (i < text.length) {
      const c = text.charAt(i);
      if (state === 'string') {
        stringStop.lastIndex = i;
        const end = stringStop.exec(text)?.index ?? text.length;
        const segment = text.slice(i, end);
        take(/[ \t\r\n]/.test(segment) ? segment.replace(/[ \t\r\n]+/g, '') : segment);
        i = end;
        if (i >= text.length) break;
        if (text.charAt(i) === '"') {
          if (total % 4 === 1) throw notBase64();
          state = 'after';
          i++;
          continue;
        }
        // An escape: \n \r \t are whitespace, \/ is '/', \uXXXX is its character.
        if (i + 1 >= text.length || (text.charAt(i + 1) === 'u' && i + 6 > text.length)) {
          carry = text.slice(i);
          break;
        }
        const escaped = text.charAt(i + 1);
        if ('nrt'.includes(escaped)) i += 2;
        else if (escaped === '/') {
          take('/');
          i += 2;
        } else if (escaped === 'u') {
          const hex = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw notJson();
          const char = String.fromCharCode(parseInt(hex, 16));
          if (!jsonSpace.test(char)) take(char);
          i += 6;
        } else throw notBase64();
        continue;
      }
      if (jsonSpace.test(c)) {
        i++;
        continue;
      }
      if (state === 'key') {
        // A field name, up to its closing quote (names are short: 1 KiB at most).
        const close = /^"((?:[^"\\]|\\.){0,1024})"/.exec(text.slice(i, i + 2100));
        if (close === null) {
          if (text.length - i > 2100) throw notJson();
          carry = text.slice(i);
          break;
        }
        try {
          key = JSON.parse(close[0]) as string;
        } catch {
          throw notJson();
        }
        i += close[0].length;
        state = 'colon';
        continue;
      }
      i++;
      if (state === 'start') {
        if (c !== '{') throw c === '[' || /[-0-9"tfn]/.test(c) ? invalid(shape) : notJson();
        state = 'next';
      } else if (state === 'next') {
        if (c === '}') throw invalid(shape);
        if (c !== '"') throw notJson();
        state = 'key';
        i--;
      } else if (state === 'colon') {
        if (c !== ':') throw notJson();
        state = 'value';
      } else if (state === 'value') {
        if (key !== 'content') throw invalid(`unknown field '${key.slice(0, 64)}'; ${shape}`);
        if (seenContent) throw invalid("field 'content' is given twice.");
        if (c !== '"') throw invalid(`Field 'content' must be a string: ${shape}`);
        seenContent = true;
        state = 'string';
      } else if (state === 'after') {
        if (c === '}') state = 'end';
        else if (c === ',') state = 'next';
        else throw notJson();
      } else throw notJson(); // 'end': nothing but whitespace may follow
    }
    if (base64.length >= decodeBatch) {
      const cut = base64.length - (base64.length % 4);
      batches.push(Buffer.from(base64.slice(0, cut), 'base64'));
      base64 = base64.slice(cut);
    }
    yield* batches;
  }
  if (state !== 'end') throw state === 'start' ? invalid(shape) : notJson();
  if (base64.length > 0) yield Buffer.from(base64, 'base64');
}

/**
 * CSV as NetAlertX's device export and import use it: a header row of column names, every value in
 * double quotes (a quote inside doubled), CRLF or LF line ends, and newlines allowed inside quotes.
 *
 * Formula injection: a spreadsheet runs a cell that starts with `=`, `+`, `-`, `@`, a tab or a CR
 * as a formula, and device names come from the LAN (a DHCP hostname is whatever a guest's phone
 * says). So the export puts a `'` in front of such a value (the OWASP advice), and the import takes
 * it off again. For that to be exact, a value that itself starts with `'` is guarded too: the
 * export prefixes `'` to every value starting with one of `= + - @ ' tab CR`, and the import takes
 * the first character off every value that starts with `'` followed by one of those. Every value
 * thus imports back exactly as it was exported (`'=1+1` is exported as `''=1+1`). NetAlertX's own
 * import would keep the `'`.
 */

import { isUtf8 } from 'node:buffer';

const guardedStart = /^[=+\-@'\t\r]/;
const guardedValue = /^'[=+\-@'\t\r]/;

/** One value as an always-quoted CSV field, formula-guarded. */
export function csvField(value: string | number | null): string {
  let text = value === null ? '' : String(value);
  if (guardedStart.test(text)) text = `'${text}`;
  return `"${text.replace(/"/g, '""')}"`;
}

export function csvLine(values: ReadonlyArray<string | number | null>): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

/** The value a field held before the export guarded it. */
export function unguard(text: string): string {
  return guardedValue.test(text) ? text.slice(1) : text;
}

/** A CSV that cannot be read; `line` is the row it is in (0 = the header, 1 = the first data row). */
export class CsvError extends Error {
  override name = 'CsvError';
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message);
  }
}

const quote = 0x22;
const comma = 0x2c;
const cr = 0x0d;
const lf = 0x0a;
const quoteByte = Buffer.from('"');

/** The index of the next byte in `chunk` from `from` that ends an unquoted run, or its length. */
function runEnd(chunk: Buffer, from: number): number {
  for (let i = from; i < chunk.length; i++) {
    const c = chunk[i];
    if (c === quote || c === comma || c === cr || c === lf) return i;
  }
  return chunk.length;
}

/**
 * Reads CSV bytes as they arrive (chunks of any size) and hands over each row as it completes, so
 * that no body is held whole. Quoted fields may hold commas, doubled quotes and newlines; blank
 * lines are ignored and not numbered. The parser works on bytes (every CSV syntax byte is ASCII, and
 * no byte of a multi-byte UTF-8 character is), then decodes each field, so that a byte that is not
 * UTF-8 is reported in the row that holds it. A row longer than `maxRowBytes` is an error: it
 * bounds what one row (or an unclosed quote) can hold.
 */
export class CsvReader {
  private fields: string[] = [];
  private parts: Buffer[] = [];
  private rowBytes = 0;
  private quoted = false;
  private fieldStarted = false;
  /** A quote was the last byte seen inside a quoted field: the next byte says "" or the end. */
  private pendingQuote = false;
  /** A CR ended the last row: an LF right after it belongs to it. */
  private pendingCr = false;
  /** Rows handed over: the number of the row being read (0 = the header). */
  private row = 0;

  constructor(
    private readonly onRow: (fields: string[], line: number) => void,
    private readonly maxRowBytes: number,
  ) {}

  push(chunk: Buffer): void {
    let i = 0;
    const n = chunk.length;
    while (i < n) {
      if (this.quoted) {
        if (this.pendingQuote) {
          this.pendingQuote = false;
          if (chunk[i] === quote) {
            this.append(quoteByte);
            i++;
          } else this.quoted = false;
          continue;
        }
        const next = chunk.indexOf(quote, i);
        const end = next < 0 ? n : next;
        this.append(chunk.subarray(i, end));
        if (next >= 0) {
          this.pendingQuote = true;
          this.count(1);
        }
        i = end + 1;
        continue;
      }
      const c = chunk[i];
      if (this.pendingCr) {
        this.pendingCr = false;
        if (c === lf) {
          i++;
          continue;
        }
      }
      if (c === quote) {
        this.quoted = true;
        this.fieldStarted = true;
        this.count(1);
        i++;
      } else if (c === comma) {
        this.endField();
        this.fieldStarted = true;
        this.count(1);
        i++;
      } else if (c === cr || c === lf) {
        this.endRow();
        this.pendingCr = c === cr;
        i++;
      } else {
        const end = runEnd(chunk, i);
        this.append(chunk.subarray(i, end));
        this.fieldStarted = true;
        i = end;
      }
    }
  }

  /** The end of the input: the last row, or the error of a quote never closed. */
  end(): void {
    if (this.quoted && !this.pendingQuote)
      throw new CsvError(`${describeLine(this.row)} has a quoted field that is never closed`, this.row);
    this.quoted = false;
    this.pendingQuote = false;
    this.endRow();
  }

  private count(bytes: number): void {
    this.rowBytes += bytes;
    if (this.rowBytes > this.maxRowBytes)
      throw new CsvError(
        `${describeLine(this.row)} is longer than ${this.maxRowBytes} bytes (is a quote never closed?)`,
        this.row,
      );
  }

  private append(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.count(bytes.length);
    this.parts.push(bytes);
  }

  private endField(): void {
    const [only] = this.parts;
    const bytes = this.parts.length === 1 && only !== undefined ? only : Buffer.concat(this.parts);
    this.parts = [];
    if (!isUtf8(bytes)) throw new CsvError(`${describeLine(this.row)} is not UTF-8 text`, this.row);
    let text = bytes.toString('utf8');
    if (this.row === 0 && this.fields.length === 0 && text.startsWith('\uFEFF')) text = text.slice(1);
    this.fields.push(text);
  }

  private endRow(): void {
    if (this.fieldStarted || this.fields.length > 0 || this.parts.length > 0) this.endField();
    const fields = this.fields;
    this.fields = [];
    this.fieldStarted = false;
    this.rowBytes = 0;
    if (fields.length === 0 || (fields.length === 1 && fields[0] === '')) return;
    this.onRow(fields, this.row++);
  }
}

/** "the header" or "line N" (N = 1 for the first row after the header, as NetAlertX numbers). */
export function describeLine(line: number): string {
  return line === 0 ? 'the header (line 0)' : `line ${line}`;
}

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

/** The start of the first character of `bytes` that is not UTF-8 (its length when all are). */
function firstNonUtf8(bytes: Buffer): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i] ?? 0;
    const size = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
    if (size > 1 && !isUtf8(bytes.subarray(i, i + size))) return i;
    i += size;
  }
  return bytes.length;
}

/** How many bytes at the end of `bytes` start a character that continues in the next chunk. */
function incompleteTail(bytes: Buffer): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back] ?? 0;
    if (byte < 0x80) return 0;
    if (byte >= 0xc0) {
      const size = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2;
      return size > back ? back : 0;
    }
  }
  return 0;
}

/** Where an unquoted run of a field stops: a quote, a comma or a line end. */
const runStop = /[",\r\n]/g;

/**
 * Reads CSV bytes as they arrive (chunks of any size) and hands over each row as it completes, so
 * that no body is held whole. Quoted fields may hold commas, doubled quotes and newlines; blank
 * lines are ignored and not numbered. Each chunk is checked as UTF-8 once and decoded (a character
 * cut by a chunk's end waits for the next); a byte that is not UTF-8 is reported in the row that
 * holds it, as the text before it is parsed first. A row longer than `maxRowChars` is an error: it
 * bounds what one row (or a quote never closed) can hold.
 */
export class CsvReader {
  private fields: string[] = [];
  private field = '';
  private rowChars = 0;
  private quoted = false;
  private fieldStarted = false;
  /** A quote was the last character seen inside a quoted field: the next says "" or the end. */
  private pendingQuote = false;
  /** A CR ended the last row: an LF right after it belongs to it. */
  private pendingCr = false;
  /** Rows handed over: the number of the row being read (0 = the header). */
  private row = 0;
  private started = false;
  /** The first bytes of a character the last chunk cut. */
  private tail: Buffer = Buffer.alloc(0);

  constructor(
    private readonly onRow: (fields: string[], line: number) => void,
    private readonly maxRowChars: number,
  ) {}

  push(chunk: Buffer): void {
    const bytes = this.tail.length === 0 ? chunk : Buffer.concat([this.tail, chunk]);
    const complete = bytes.length - incompleteTail(bytes);
    this.tail = Buffer.from(bytes.subarray(complete));
    if (isUtf8(bytes.subarray(0, complete))) {
      this.read(bytes.toString('utf8', 0, complete));
      return;
    }
    this.read(bytes.toString('utf8', 0, firstNonUtf8(bytes.subarray(0, complete))));
    throw this.notUtf8();
  }

  /** The end of the input: the last row, or the error of a quote never closed. */
  end(): void {
    if (this.tail.length > 0) throw this.notUtf8();
    if (this.quoted && !this.pendingQuote)
      throw new CsvError(`${describeLine(this.row)} has a quoted field that is never closed`, this.row);
    this.quoted = false;
    this.pendingQuote = false;
    this.endRow();
  }

  private notUtf8(): CsvError {
    return new CsvError(`${describeLine(this.row)} is not UTF-8 text`, this.row);
  }

  private read(input: string): void {
    let text = input;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.startsWith('\uFEFF')) text = text.slice(1);
    }
    let i = 0;
    const n = text.length;
    while (i < n) {
      if (this.quoted) {
        if (this.pendingQuote) {
          this.pendingQuote = false;
          if (text.charCodeAt(i) === 0x22) {
            this.append('"');
            i++;
          } else this.quoted = false;
          continue;
        }
        const next = text.indexOf('"', i);
        const end = next < 0 ? n : next;
        this.append(text.slice(i, end));
        if (next >= 0) {
          this.pendingQuote = true;
          this.count(1);
        }
        i = end + 1;
        continue;
      }
      const c = text.charCodeAt(i);
      if (this.pendingCr) {
        this.pendingCr = false;
        if (c === 0x0a) {
          i++;
          continue;
        }
      }
      if (c === 0x22) {
        this.quoted = true;
        this.fieldStarted = true;
        this.count(1);
        i++;
      } else if (c === 0x2c) {
        this.endField();
        this.fieldStarted = true;
        this.count(1);
        i++;
      } else if (c === 0x0d || c === 0x0a) {
        this.endRow();
        this.pendingCr = c === 0x0d;
        i++;
      } else {
        runStop.lastIndex = i;
        const end = runStop.exec(text)?.index ?? n;
        this.append(text.slice(i, end));
        this.fieldStarted = true;
        i = end;
      }
    }
  }

  private count(chars: number): void {
    this.rowChars += chars;
    if (this.rowChars > this.maxRowChars)
      throw new CsvError(
        `${describeLine(this.row)} is longer than ${this.maxRowChars} characters (is a quote never closed?)`,
        this.row,
      );
  }

  private append(text: string): void {
    if (text.length === 0) return;
    this.count(text.length);
    this.field += text;
  }

  private endField(): void {
    this.fields.push(this.field);
    this.field = '';
  }

  private endRow(): void {
    if (this.fieldStarted || this.fields.length > 0 || this.field !== '') this.endField();
    const fields = this.fields;
    this.fields = [];
    this.fieldStarted = false;
    this.rowChars = 0;
    if (fields.length === 0 || (fields.length === 1 && fields[0] === '')) return;
    this.onRow(fields, this.row++);
  }
}

/** "the header" or "line N" (N = 1 for the first row after the header, as NetAlertX numbers). */
function describeLine(line: number): string {
  return line === 0 ? 'the header (line 0)' : `line ${line}`;
}

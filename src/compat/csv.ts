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

export interface CsvRecord {
  /** 1 for the first row after the header, as NetAlertX numbers skipped lines. */
  readonly line: number;
  readonly fields: string[];
}

/**
 * Parses CSV text into the header and the data rows. Quoted fields may hold commas, doubled quotes
 * and newlines; an unterminated quote is an error naming the row. Blank lines are ignored.
 */
export function parseCsv(text: string): { header: string[]; records: CsvRecord[] } {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let fieldStarted = false;
  const input = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const endRow = (): void => {
    if (fieldStarted || row.length > 0 || field !== '') row.push(field);
    if (row.length > 0 && !(row.length === 1 && row[0] === '')) rows.push(row);
    row = [];
    field = '';
    fieldStarted = false;
  };
  for (let i = 0; i < input.length; i++) {
    const c = input.charAt(i);
    if (quoted) {
      if (c === '"') {
        if (input[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else field += c;
      continue;
    }
    if (c === '"') {
      quoted = true;
      fieldStarted = true;
    } else if (c === ',') {
      row.push(field);
      field = '';
      fieldStarted = true;
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && input[i + 1] === '\n') i++;
      endRow();
    } else {
      field += c;
      fieldStarted = true;
    }
  }
  if (quoted) throw new RangeError(`a quoted field in row ${rows.length + 1} is never closed`);
  endRow();
  const [header = [], ...data] = rows;
  return { header: header.map((h) => h.trim()), records: data.map((fields, i) => ({ line: i + 1, fields })) };
}

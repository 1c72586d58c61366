/**
 * JSON answers holding a list, written as a stream, item by item, so that a list of any length is
 * sent in bounded memory: the items come from a generator that reads them in short batches, and the
 * stream pulls the next item only when the socket has taken the previous ones (backpressure). The
 * bytes are what serialising the whole value at once would give.
 */
import { Readable } from 'node:stream';

/** Bytes buffered ahead of the socket before the stream stops pulling items. */
const highWaterMark = 64 * 1024;

/** The JSON text of `items` as an array, in pieces: `[`, then one item at a time, then `]<after>`. */
async function* arrayChunks(
  before: string,
  items: Iterable<unknown> | AsyncIterable<unknown>,
  after: string,
): AsyncGenerator<string> {
  yield `${before}[`;
  let first = true;
  for await (const item of items) {
    yield first ? JSON.stringify(item) : `,${JSON.stringify(item)}`;
    first = false;
  }
  yield `]${after}`;
}

/** `{"success":true,"<key>":[..items..],<tail fields>}`. */
export function jsonListStream(
  key: string,
  items: Iterable<unknown> | AsyncIterable<unknown>,
  tail: Readonly<Record<string, unknown>>,
): Readable {
  const rest = Object.entries(tail).map(
    ([name, value]) => `,${JSON.stringify(name)}:${JSON.stringify(value)}`,
  );
  return Readable.from(arrayChunks(`{"success":true,${JSON.stringify(key)}:`, items, `${rest.join('')}}`), {
    objectMode: false,
    highWaterMark,
  });
}

/** Characters gathered into one piece of a list of ready JSON texts. */
const pieceChars = 64 * 1024;
/**
 * An answer up to this many characters is sent as one string (a page of 100 devices: ~74 Ki); a
 * longer one is streamed, so its first bytes leave once this much is ready.
 */
const wholeChars = 256 * 1024;

/**
 * `{"success":true,"<key>":[..texts..],<tail fields>}` where each item is already JSON text (a
 * cache's), in pieces of about 64 Ki characters: the same bytes as `jsonListStream` of the parsed
 * items. An answer that fits in 256 Ki characters is one string (a stream costs more than it saves
 * there); a longer one is a stream.
 */
export async function jsonTextList(
  key: string,
  texts: Iterable<string> | AsyncIterable<string>,
  tail: Readonly<Record<string, unknown>>,
): Promise<string | Readable> {
  const rest = Object.entries(tail).map(
    ([name, value]) => `,${JSON.stringify(name)}:${JSON.stringify(value)}`,
  );
  const pieces = textPieces(`{"success":true,${JSON.stringify(key)}:[`, texts, `]${rest.join('')}}`);
  const head: string[] = [];
  let chars = 0;
  for (;;) {
    const next = await pieces.next();
    if (next.done === true) return head.join('');
    head.push(next.value);
    chars += next.value.length;
    if (chars > wholeChars) break;
  }
  return Readable.from(
    (async function* () {
      yield* head;
      yield* pieces;
    })(),
    { objectMode: false, highWaterMark },
  );
}

async function* textPieces(
  before: string,
  texts: Iterable<string> | AsyncIterable<string>,
  after: string,
): AsyncGenerator<string> {
  let piece = [before];
  let chars = before.length;
  let first = true;
  for await (const text of texts) {
    piece.push(first ? text : `,${text}`);
    first = false;
    chars += text.length + 1;
    if (chars >= pieceChars) {
      yield piece.join('');
      piece = [];
      chars = 0;
    }
  }
  piece.push(after);
  yield piece.join('');
}

/** A bare JSON array `[..items..]` (NetAlertX's shape for some lists). */
export function jsonArrayStream(items: Iterable<unknown> | AsyncIterable<unknown>): Readable {
  return Readable.from(arrayChunks('', items, ''), { objectMode: false, highWaterMark });
}

/**
 * Every row of a table read in pages by key, for a streamed answer: `page(after, size)` returns up to
 * `size` rows after the key `after` ('' first), in key order. Pages are short reads (no iterator is
 * held open between them, which would keep the database connection busy while the socket drains).
 */
export async function* keyedPages<Row>(
  page: (after: string, size: number) => Promise<readonly Row[]>,
  keyOf: (row: Row) => string,
  size: number,
): AsyncGenerator<Row> {
  let after = '';
  for (;;) {
    const rows = await page(after, size);
    yield* rows;
    const last = rows[rows.length - 1];
    if (last === undefined || rows.length < size) return;
    after = keyOf(last);
  }
}

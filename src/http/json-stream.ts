/**
 * A JSON answer of the shape `{"success":true,"<key>":[..items..],<tail fields>}` written as a
 * stream, item by item, so that a list of any length is sent in bounded memory: the items come from
 * a generator that reads them in short batches, and the stream pulls the next item only when the
 * socket has taken the previous ones (backpressure). The bytes are what serialising the whole
 * object at once would give.
 */
import { Readable } from 'node:stream';

/** Bytes buffered ahead of the socket before the stream stops pulling items. */
const highWaterMark = 64 * 1024;

export function jsonListStream(
  key: string,
  items: Iterable<unknown>,
  tail: Readonly<Record<string, unknown>>,
): Readable {
  function* chunks(): Generator<string> {
    yield `{"success":true,${JSON.stringify(key)}:[`;
    let first = true;
    for (const item of items) {
      yield first ? JSON.stringify(item) : `,${JSON.stringify(item)}`;
      first = false;
    }
    const rest = Object.entries(tail).map(
      ([name, value]) => `${JSON.stringify(name)}:${JSON.stringify(value)}`,
    );
    yield `]${rest.map((field) => `,${field}`).join('')}}`;
  }
  return Readable.from(chunks(), { objectMode: false, highWaterMark });
}

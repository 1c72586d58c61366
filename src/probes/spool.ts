/**
 * A probe's spool: the cycles the hub has not taken yet, on disk in $DATA_DIR/spool, one file per
 * cycle named by a sequence number (so that sorting the names is the probe's order). Each file is
 * written atomically (a temporary file, fsync, rename, fsync of the directory), so a kill -9 or a
 * power cut leaves either the whole cycle or none of it, never half a file. A cycle's file is
 * removed only once the hub answered 200 for it; a cycle sent again after a crash is a repeated
 * cycleId to the hub, which answers 200 and changes nothing.
 *
 * Bounded by PROBE_SPOOL_MAX: past it the oldest cycles are dropped, and how many is kept (in the
 * file `dropped`, written the same way) until an upload has reported it to the hub.
 */
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';

const entryName = /^(\d{12})\.json$/;

/** Writes a file atomically and durably: a reader sees the old content or the whole new one. */
function writeDurably(dir: string, name: string, content: string): void {
  const temporary = join(dir, `.${name}.tmp`);
  const fd = openSync(temporary, 'w', 0o600);
  try {
    writeSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, join(dir, name));
  syncDirectory(dir);
}

function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export interface SpooledCycle {
  /** The file's sequence number. */
  readonly seq: number;
  /** The upload body as stored (JSON text). */
  readonly body: string;
}

export class Spool {
  private readonly dir: string;
  /** The sequence numbers held, oldest first: read from the directory once, then kept here. */
  private readonly seqs: number[];
  private next: number;

  constructor(
    dataDir: string,
    private readonly max: number,
  ) {
    this.dir = join(dataDir, 'spool');
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    // Temporary files of a write a crash interrupted are not cycles.
    for (const name of readdirSync(this.dir))
      if (name.endsWith('.tmp')) rmSync(join(this.dir, name), { force: true });
    this.seqs = [];
    for (const name of readdirSync(this.dir)) {
      const match = entryName.exec(name);
      if (match?.[1] !== undefined) this.seqs.push(Number(match[1]));
    }
    this.seqs.sort((a, b) => a - b);
    const last = this.seqs.at(-1);
    this.next = last === undefined ? 1 : last + 1;
  }

  private file(seq: number): string {
    return `${String(seq).padStart(12, '0')}.json`;
  }

  /** Cycles held. */
  get size(): number {
    return this.seqs.length;
  }

  /** Cycles dropped and not reported yet. */
  get dropped(): number {
    try {
      const value = Number(readFileSync(join(this.dir, 'dropped'), 'utf8'));
      return Number.isSafeInteger(value) && value > 0 ? value : 0;
    } catch {
      return 0;
    }
  }

  /** Adds a cycle (durably); drops the oldest past PROBE_SPOOL_MAX. Returns how many were dropped. */
  add(body: string): number {
    writeDurably(this.dir, this.file(this.next), body);
    this.seqs.push(this.next);
    this.next++;
    const excess = this.seqs.length - this.max;
    if (excess <= 0) return 0;
    writeDurably(this.dir, 'dropped', String(this.dropped + excess));
    for (const seq of this.seqs.splice(0, excess)) rmSync(join(this.dir, this.file(seq)), { force: true });
    return excess;
  }

  /** The oldest cycle held; undefined when the spool is empty. */
  oldest(): SpooledCycle | undefined {
    const [seq] = this.seqs;
    if (seq === undefined) return undefined;
    return { seq, body: readFileSync(join(this.dir, this.file(seq)), 'utf8') };
  }

  /** Removes a cycle the hub took (or refused for good). */
  remove(seq: number): void {
    const at = this.seqs.indexOf(seq);
    if (at >= 0) this.seqs.splice(at, 1);
    rmSync(join(this.dir, this.file(seq)), { force: true });
    syncDirectory(this.dir);
  }

  /** `reported` dropped cycles reached the hub: they are no longer owed. */
  reportedDropped(reported: number): void {
    if (reported <= 0) return;
    writeDurably(this.dir, 'dropped', String(Math.max(0, this.dropped - reported)));
  }
}

/**
 * The worker thread of `WalCheckpointer` (wal-checkpointer.ts): a connection of its own to the
 * database, which copies the WAL into the database file each time it is asked. The copy and its
 * two flushes to disk then hold this thread, not the server's event loop.
 *
 * Messages in: 'checkpoint' or 'close'. Out: one `CheckpointOutcome` per 'checkpoint'. An error
 * ends the thread (its 'error' event), and the owner then lets SQLite checkpoint on its own again.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

/** What one checkpoint did, in WAL frames (SQLite's `wal_checkpoint` row). */
export interface CheckpointOutcome {
  /** 1 when another connection held the checkpoint lock and nothing was copied. */
  readonly busy: number;
  /** Frames in the WAL. */
  readonly log: number;
  /** Frames of it now copied into the database file. */
  readonly checkpointed: number;
}

const port = parentPort;
if (port === null) throw new Error('checkpoint-worker.js runs only as a worker thread');
const { file } = workerData as { file: string };
// Never creates the file: the owner's connection has it open, in WAL mode.
const db = new Database(file, { fileMustExist: true });
// FULL, as the server's own connection: the checkpoint flushes the WAL before it copies frames
// into the database file, and flushes that file before the WAL may be started over.
db.pragma('synchronous = FULL');

port.on('message', (message: unknown) => {
  if (message === 'close') {
    db.close();
    port.close();
    return;
  }
  // PASSIVE: copies what no reader still needs and never waits for readers or the writer, so the
  // server's writes go on meanwhile.
  const [outcome] = db.pragma('wal_checkpoint(PASSIVE)') as CheckpointOutcome[];
  port.postMessage(outcome);
});

/**
 * The pino logger: JSON lines on stdout. The Authorization header, the token and the notification
 * secrets (webhook secret, ntfy token, MQTT URL with its password) are redacted wherever a log line
 * carries them under these names; the alert code logs channel URLs only in redacted form.
 */
import { writeSync } from 'node:fs';
import pino, { type Logger } from 'pino';

/** Writes bytes to a file descriptor; returns how many it took (as `fs.writeSync`). */
export type WriteOut = (fd: number, bytes: Uint8Array) => number;

const nap = new Int32Array(new SharedArrayBuffer(4));

/**
 * pino's destination: the lines logged during one turn of the event loop are written together at
 * its end, in one write(), instead of one write() per line. Why: under a write load every request
 * logs a line (about ten per turn at 32 connections), and its own write() was about a tenth of
 * the request's CPU time (docs/benchmarks-history.md). The write stays synchronous, as pino's
 * default destination's: no thread pool, and a line waits at most for the rest of its turn. What
 * is left when the process exits (`process.exit`, an uncaught exception) is written then; only a
 * SIGKILL can lose the lines of the current turn.
 */
export class TurnBatchedLines {
  private lines: string[] = [];
  private scheduled = false;
  /** Set once the file cannot be written any more (e.g. the pipe's reader is gone): lines are dropped. */
  private closed = false;

  constructor(
    private readonly fd: number,
    private readonly writeOut: WriteOut = writeSync,
  ) {
    process.on('exit', () => {
      this.flush();
    });
  }

  write(line: string): void {
    if (this.closed) return;
    this.lines.push(line);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.flush();
    });
  }

  /** Writes every line not written yet, now (pino's `logger.flush()` calls it too). */
  flush(done?: (error?: Error) => void): void {
    this.scheduled = false;
    if (this.lines.length > 0) {
      let bytes: Uint8Array = Buffer.from(this.lines.join(''));
      this.lines = [];
      while (bytes.length > 0 && !this.closed) {
        try {
          bytes = bytes.subarray(this.writeOut(this.fd, bytes));
        } catch (error) {
          // A full pipe that is non-blocking: wait for its reader, as a blocking write would.
          if ((error as NodeJS.ErrnoException).code === 'EAGAIN') Atomics.wait(nap, 0, 0, 1);
          // Anything else (EPIPE: nobody reads any more) ends logging; it never stops the server.
          else this.closed = true;
        }
      }
    }
    done?.();
  }
}

/** stdout's, shared by every logger of the process (one exit handler, one write per turn). */
let stdoutLines: TurnBatchedLines | undefined;

export function createLogger(level: string): Logger {
  stdoutLines ??= new TurnBatchedLines(1);
  return pino(
    {
      level,
      redact: {
        paths: [
          'req.headers.authorization',
          'headers.authorization',
          'token',
          'API_TOKEN',
          'secret',
          'password',
          'NOTIFY_WEBHOOK_SECRET',
          'NOTIFY_NTFY_TOKEN',
          'MQTT_URL',
        ],
        censor: '[redacted]',
      },
    },
    stdoutLines,
  );
}

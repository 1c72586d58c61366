/**
 * The timer of a background watch (ports.ts, dhcp.ts): a run `firstMs` after start, then one
 * `intervalMs` after each run ends (runs never overlap; a slow run delays the next). A call while a
 * run is going shares that run. `stop()` aborts the signal the run's tools listen on, so that a
 * long nmap ends at once, and waits for the run (the database is not closed under it).
 */
import { setMaxListeners } from 'node:events';

export class PeriodicRun<T> {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<T> | undefined;
  private readonly abort = new AbortController();

  constructor(private readonly run: () => Promise<T>) {
    // Every queued scan listens on the one signal (200 devices: 200 listeners), on purpose.
    setMaxListeners(0, this.abort.signal);
  }

  /** Aborted by stop(): for the tools a run starts. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  start(firstMs: number, intervalMs: number): void {
    const schedule = (delayMs: number): void => {
      this.timer = setTimeout(() => {
        void this.runNow()
          .catch(() => undefined)
          .finally(() => {
            if (!this.abort.signal.aborted) schedule(intervalMs);
          });
      }, delayMs);
      this.timer.unref();
    };
    schedule(firstMs);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.abort.abort();
    await Promise.allSettled([this.running]);
  }

  /** Runs now, or shares the run under way. */
  runNow(): Promise<T> {
    this.running ??= this.run().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }
}

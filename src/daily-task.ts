/**
 * A task that runs once at start (on the next turn of the event loop) and then daily, owned by the
 * module whose data it keeps: history retention, the alert outbox's retention. A call while a run
 * is going shares that run; after `stop()` nothing runs and `stop()` waits for the current run
 * (so that the database is not closed under it). A failed run is reported by `run` itself and the
 * next day's run happens anyway.
 */
const dayMs = 86_400_000;

export class DailyTask<T> {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<T> | undefined;
  private stopped = false;

  /** `idle`: what a call after stop() resolves with (nothing was done). */
  constructor(
    private readonly run: () => Promise<T>,
    private readonly idle: T,
  ) {}

  /** Runs at once (on the next turn of the event loop), then every day. */
  start(): void {
    if (this.stopped) return;
    this.timer = setInterval(() => void this.runNow().catch(() => undefined), dayMs);
    this.timer.unref();
    setImmediate(() => void this.runNow().catch(() => undefined));
  }

  /** Runs now, or shares the run under way. */
  runNow(): Promise<T> {
    if (this.stopped) return Promise.resolve(this.idle);
    this.running ??= this.run().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** No more runs; waits for the current one to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await Promise.allSettled([this.running]);
  }
}

/**
 * History retention: events and closed sessions older than HISTORY_DAYS are deleted once at start
 * and then daily, whether presence scanning is on or not. Its own loop, apart from the scan loop;
 * the deleting itself (in batches that leave the event loop free) is the store's.
 */
import type { Database } from 'better-sqlite3';
import type { Logger } from 'pino';
import { ScanStore, type PruneResult } from './store.js';

export interface HistoryRetentionOptions {
  readonly db: Database;
  /** HISTORY_DAYS. */
  readonly days: number;
  readonly logger: Pick<Logger, 'info' | 'error'>;
  /** Clock (tests control it). Default: the system clock. */
  readonly now?: () => Date;
}

const dayMs = 86_400_000;

export class HistoryRetention {
  private readonly store: ScanStore;
  private readonly now: () => Date;
  private timer: NodeJS.Timeout | undefined;
  private pruning: Promise<PruneResult> | undefined;
  private stopped = false;

  constructor(private readonly options: HistoryRetentionOptions) {
    this.store = new ScanStore(options.db);
    this.now = options.now ?? (() => new Date());
  }

  /** Prunes at once (on the next turn of the event loop), then every day. */
  start(): void {
    if (this.stopped) return;
    this.timer = setInterval(() => void this.pruneNow().catch(() => undefined), dayMs);
    this.timer.unref();
    setImmediate(() => void this.pruneNow().catch(() => undefined));
  }

  /** Deletes history older than HISTORY_DAYS. A call while a prune runs shares that prune. */
  pruneNow(): Promise<PruneResult> {
    if (this.stopped) return Promise.resolve({ events: 0, sessions: 0 });
    this.pruning ??= this.store
      .pruneHistory(this.options.days, this.now())
      .then(
        (result) => {
          if (result.events + result.sessions > 0)
            this.options.logger.info(
              { event: 'history-pruned', ...result },
              'old events and sessions pruned',
            );
          return result;
        },
        (err: unknown) => {
          this.options.logger.error({ err }, 'history pruning failed');
          throw err;
        },
      )
      .finally(() => {
        this.pruning = undefined;
      });
    return this.pruning;
  }

  /** No more prunes; waits for a running one to finish (before the database closes). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await Promise.allSettled([this.pruning]);
  }
}

/**
 * History retention: events and closed sessions older than HISTORY_DAYS are deleted once at start
 * and then daily, whether presence scanning is on or not. Its own loop, apart from the scan loop;
 * the deleting itself (in batches that leave the event loop free) is the store's.
 */
import type { Logger } from 'pino';
import { DailyTask } from '../daily-task.js';
import type { PresenceStore } from '../store/presence.js';
import { pruneHistory, type PruneResult } from './store.js';

export interface HistoryRetentionOptions {
  /** The device store: it deletes the rows. */
  readonly presence: PresenceStore;
  /** HISTORY_DAYS. */
  readonly days: number;
  readonly logger: Pick<Logger, 'info' | 'error'>;
  /** Clock (tests control it). Default: the system clock. */
  readonly now?: () => Date;
}

export class HistoryRetention {
  private readonly now: () => Date;
  private readonly task: DailyTask<PruneResult>;

  constructor(private readonly options: HistoryRetentionOptions) {
    this.now = options.now ?? (() => new Date());
    this.task = new DailyTask(() => this.prune(), { events: 0, sessions: 0 });
  }

  /** Prunes at once (on the next turn of the event loop), then every day. */
  start(): void {
    this.task.start();
  }

  /** Deletes history older than HISTORY_DAYS. A call while a prune runs shares that prune. */
  pruneNow(): Promise<PruneResult> {
    return this.task.runNow();
  }

  /** No more prunes; waits for a running one to finish (before the database closes). */
  stop(): Promise<void> {
    return this.task.stop();
  }

  private async prune(): Promise<PruneResult> {
    try {
      const result = await pruneHistory(this.options.presence, this.options.days, this.now());
      if (result.events + result.sessions > 0)
        this.options.logger.info({ event: 'history-pruned', ...result }, 'old events and sessions pruned');
      return result;
    } catch (err) {
      this.options.logger.error({ err }, 'history pruning failed');
      throw err;
    }
  }
}

/**
 * The change feed: one in-process publisher of what changed, after it is committed. The scanner
 * publishes each applied cycle (its events and presence changes) and each finished cycle's summary;
 * the device routes publish API writes. Live streams, metrics and the MQTT state publisher
 * subscribe. Alert notifications do NOT come from here: they are written into the outbox inside the
 * cycle's own transaction, so that a crash can never lose them.
 *
 * A subscriber that throws is logged and never breaks the publisher or the other subscribers.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { CycleSummary } from './scanner/summary.js';

/** An event a scan cycle wrote, as stored (times as Date values, not storage text). */
export interface ScanEventRecord {
  readonly mac: string;
  readonly ip: string;
  readonly type: string;
  readonly time: Date;
  readonly additionalInfo: string;
}

/** The summary of a finished scan cycle (defined once, with its schema, in the scanner). */
export type ScanCycleSummary = CycleSummary;

export interface ChangeEvents {
  /** A device was created, changed or deleted through the API. */
  device: { readonly mac: string; readonly change: 'created' | 'updated' | 'deleted' };
  /** Many devices changed at once (a CSV import): one change for all of them. */
  devices: { readonly created: readonly string[]; readonly updated: readonly string[] };
  /** A cycle was applied: what it wrote, in order, and whose presence flipped. */
  'scan-applied': {
    readonly events: readonly ScanEventRecord[];
    readonly presence: ReadonlyArray<{ readonly mac: string; readonly present: boolean }>;
  };
  /** A cycle finished (applied or failed: `errors` says which). */
  'scan-finished': ScanCycleSummary;
}

type Listener<K extends keyof ChangeEvents> = (payload: ChangeEvents[K]) => void;

export class ChangeFeed {
  private readonly emitter = new EventEmitter();

  constructor(private readonly logger?: Pick<Logger, 'error'>) {
    // Streams, metrics and MQTT each subscribe once; the default warning at 10 is not a leak signal.
    this.emitter.setMaxListeners(0);
  }

  publish<K extends keyof ChangeEvents>(kind: K, payload: ChangeEvents[K]): void {
    for (const listener of this.emitter.listeners(kind) as Listener<K>[]) {
      try {
        listener(payload);
      } catch (err) {
        this.logger?.error({ err, kind }, 'change feed subscriber failed');
      }
    }
  }

  /** Subscribes; returns the function that unsubscribes. */
  subscribe<K extends keyof ChangeEvents>(kind: K, listener: Listener<K>): () => void {
    this.emitter.on(kind, listener);
    return () => {
      this.emitter.off(kind, listener);
    };
  }
}

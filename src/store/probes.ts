/**
 * The probes' store: the Probes and ProbeCycles tables behind a storage-neutral,
 * Promise-returning interface, so that a PostgreSQL store can implement it too. Times are Date
 * values; the token is only ever seen here as its SHA-256 hash.
 *
 * A cycle's bookkeeping (its cycleId and its probe's row) is written in the cycle's own
 * transaction, given as data to the presence store (`PresenceExtras.probeCycle`); a status change's
 * notice is given as data to `setStatus` (a `NotifyRequest`), so that each commits with its change
 * or not at all. A PostgreSQL store runs them on the transaction's client.
 */

import type { NotifyRequest } from './outbox.js';

export const probeStatuses = ['never', 'online', 'offline'] as const;
export type ProbeStatus = (typeof probeStatuses)[number];

export interface ProbeRecord {
  /** UUID; also the first part of the probe's token. */
  readonly id: string;
  readonly name: string;
  readonly site: string;
  /** The subnets of its last cycle (CIDR text); empty before its first one. */
  readonly subnets: readonly string[];
  readonly createdAt: Date;
  /** When the hub applied its last cycle; null before its first one. */
  readonly lastCycleAt: Date | null;
  /** That cycle's own startedAt: a cycle that started before it is out of order. */
  readonly lastCycleStartedAt: Date | null;
  readonly status: ProbeStatus;
  /** Cycles waiting in its spool, as its last upload said. */
  readonly spooledCycles: number;
  /** Cycles its spool dropped (PROBE_SPOOL_MAX), summed over its uploads. */
  readonly droppedCycles: number;
}

export interface NewProbe {
  readonly id: string;
  readonly name: string;
  readonly site: string;
  /** SHA-256 of the token's secret part. */
  readonly tokenHash: Buffer;
  readonly createdAt: Date;
}

/** What an applied cycle leaves on its probe's row (written with the cycle). */
export interface AppliedCycle {
  readonly probeId: string;
  readonly cycleId: string;
  readonly startedAt: Date;
  readonly appliedAt: Date;
  readonly subnets: readonly string[];
  readonly spooledCycles: number;
  readonly droppedCycles: number;
}

export interface ProbeStore {
  /** Adds a probe; false when the name is taken (nothing written). */
  create(probe: NewProbe): Promise<boolean>;
  list(): Promise<ProbeRecord[]>;
  get(id: string): Promise<ProbeRecord | undefined>;
  /** The stored hash of the probe's token; undefined when there is no such probe. */
  tokenHash(id: string): Promise<Buffer | undefined>;
  /** Removes the probe and its cycleIds; false when there was none. */
  delete(id: string): Promise<boolean>;
  /** Whether the probe's cycle with this id was applied already. */
  hasCycle(probeId: string, cycleId: string): Promise<boolean>;
  /**
   * Moves the probe from status `from` to `to` in one transaction, writing `notify` in it when it
   * moved (its notification commits with it). False when the probe was not in `from`.
   */
  setStatus(id: string, from: ProbeStatus, to: ProbeStatus, notify?: NotifyRequest): Promise<boolean>;
  /**
   * Forgets the probe's cycleIds applied before `before` (an older repeat is refused by its order).
   * One probe's at a time, through the (probe, applied) index: after each of its cycles, the hub
   * prunes that probe's. A scan of every probe's rows per cycle would grow with the table (100
   * probes at one cycle a minute keep 4.5 million cycleIds over 31 days).
   */
  pruneCycles(probeId: string, before: Date): Promise<number>;
}

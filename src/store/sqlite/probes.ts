/**
 * ProbeStore on SQLite: every SQL text over Probes and ProbeCycles. Statements are prepared once;
 * every value is a bound parameter. better-sqlite3 is synchronous: each method does its work when
 * called and returns a settled promise, and the methods called inside a cycle's transaction throw
 * at once (see src/store/probes.ts).
 */
import type { Database, Statement, Transaction } from 'better-sqlite3';
import { dbTime, fromDbTime } from '../../time.js';
import type { NotifyRequest } from '../outbox.js';
import type { AppliedCycle, NewProbe, ProbeRecord, ProbeStatus, ProbeStore } from '../probes.js';
import type { SqliteOutboxStore } from './outbox.js';

/** A Probes row as both stores read it. */
export interface ProbeRow {
  prb_Id: string;
  prb_Name: string;
  prb_Site: string;
  prb_CreatedAt: string;
  prb_Subnets: string;
  prb_LastCycleAt: string | null;
  prb_LastCycleStartedAt: string | null;
  prb_Status: ProbeStatus;
  prb_SpooledCycles: number;
  prb_DroppedCycles: number;
}

const columns = `prb_Id, prb_Name, prb_Site, prb_CreatedAt, prb_Subnets, prb_LastCycleAt,
  prb_LastCycleStartedAt, prb_Status, prb_SpooledCycles, prb_DroppedCycles`;

const date = (text: string): Date => new Date(fromDbTime(text));

/** Millisecond precision for the order check (storage text has seconds). */
const preciseTime = (value: Date): string => value.toISOString();

/** A Probes row as the interface's record (both stores). */
export function record(row: ProbeRow): ProbeRecord {
  const subnets: unknown = JSON.parse(row.prb_Subnets);
  return {
    id: row.prb_Id,
    name: row.prb_Name,
    site: row.prb_Site,
    subnets: Array.isArray(subnets) ? subnets.filter((s): s is string => typeof s === 'string') : [],
    createdAt: date(row.prb_CreatedAt),
    lastCycleAt: row.prb_LastCycleAt === null ? null : date(row.prb_LastCycleAt),
    lastCycleStartedAt: row.prb_LastCycleStartedAt === null ? null : new Date(row.prb_LastCycleStartedAt),
    status: row.prb_Status,
    spooledCycles: row.prb_SpooledCycles,
    droppedCycles: row.prb_DroppedCycles,
  };
}

export class SqliteProbeStore implements ProbeStore {
  private readonly insert: Statement<[string, string, string, Buffer, string]>;
  private readonly all: Statement<[], ProbeRow>;
  private readonly one: Statement<[string], ProbeRow>;
  private readonly hash: Statement<[string], { prb_TokenHash: Buffer }>;
  private readonly remove: Statement<[string]>;
  private readonly removeCycles: Statement<[string]>;
  private readonly cycle: Statement<[string, string], { found: number }>;
  private readonly insertCycle: Statement<[string, string, string]>;
  private readonly updateAfterCycle: Statement<[string, string, string, number, number, string]>;
  private readonly moveStatus: Statement<[ProbeStatus, string, ProbeStatus]>;
  private readonly prune: Statement<[string, string]>;
  private readonly deleteTx: (id: string) => boolean;
  private readonly statusTx: Transaction<
    (id: string, from: ProbeStatus, to: ProbeStatus, notify: NotifyRequest | undefined) => boolean
  >;

  /** @param outbox where a status change's notice is written, in the change's transaction */
  constructor(
    db: Database,
    private readonly outbox?: Pick<SqliteOutboxStore, 'writeRequested'>,
  ) {
    this.insert = db.prepare(`
      INSERT INTO Probes (prb_Id, prb_Name, prb_Site, prb_TokenHash, prb_CreatedAt)
      VALUES (?, ?, ?, ?, ?) ON CONFLICT (prb_Name) DO NOTHING`);
    this.all = db.prepare(`SELECT ${columns} FROM Probes ORDER BY prb_Name`);
    this.one = db.prepare(`SELECT ${columns} FROM Probes WHERE prb_Id = ?`);
    this.hash = db.prepare('SELECT prb_TokenHash FROM Probes WHERE prb_Id = ?');
    this.remove = db.prepare('DELETE FROM Probes WHERE prb_Id = ?');
    this.removeCycles = db.prepare('DELETE FROM ProbeCycles WHERE pcy_ProbeId = ?');
    this.cycle = db.prepare('SELECT 1 AS found FROM ProbeCycles WHERE pcy_ProbeId = ? AND pcy_CycleId = ?');
    this.insertCycle = db.prepare(
      'INSERT INTO ProbeCycles (pcy_ProbeId, pcy_CycleId, pcy_AppliedAt) VALUES (?, ?, ?)',
    );
    this.updateAfterCycle = db.prepare(`
      UPDATE Probes SET prb_Subnets = ?, prb_LastCycleAt = ?, prb_LastCycleStartedAt = ?,
        prb_SpooledCycles = ?, prb_DroppedCycles = prb_DroppedCycles + ?, prb_Status = 'online'
      WHERE prb_Id = ?`);
    this.moveStatus = db.prepare('UPDATE Probes SET prb_Status = ? WHERE prb_Id = ? AND prb_Status = ?');
    this.prune = db.prepare('DELETE FROM ProbeCycles WHERE pcy_ProbeId = ? AND pcy_AppliedAt < ?');
    this.deleteTx = db.transaction((id: string) => {
      this.removeCycles.run(id);
      return this.remove.run(id).changes > 0;
    });
    this.statusTx = db.transaction((id, from, to, notify) => {
      if (this.moveStatus.run(to, id, from).changes === 0) return false;
      if (notify !== undefined) this.outbox?.writeRequested(notify);
      return true;
    });
  }

  create(probe: NewProbe): Promise<boolean> {
    const { changes } = this.insert.run(
      probe.id,
      probe.name,
      probe.site,
      probe.tokenHash,
      dbTime(probe.createdAt),
    );
    return Promise.resolve(changes > 0);
  }

  list(): Promise<ProbeRecord[]> {
    return Promise.resolve(this.all.all().map(record));
  }

  get(id: string): Promise<ProbeRecord | undefined> {
    const row = this.one.get(id);
    return Promise.resolve(row === undefined ? undefined : record(row));
  }

  tokenHash(id: string): Promise<Buffer | undefined> {
    return Promise.resolve(this.hash.get(id)?.prb_TokenHash);
  }

  delete(id: string): Promise<boolean> {
    return Promise.resolve(this.deleteTx(id));
  }

  hasCycle(probeId: string, cycleId: string): Promise<boolean> {
    return Promise.resolve(this.cycle.get(probeId, cycleId) !== undefined);
  }

  /** A cycle's bookkeeping; run inside the cycle's transaction (see ../probes.ts). */
  recordCycleNow(cycle: AppliedCycle): void {
    this.insertCycle.run(cycle.probeId, cycle.cycleId, dbTime(cycle.appliedAt));
    this.updateAfterCycle.run(
      JSON.stringify(cycle.subnets),
      dbTime(cycle.appliedAt),
      preciseTime(cycle.startedAt),
      cycle.spooledCycles,
      cycle.droppedCycles,
      cycle.probeId,
    );
  }

  setStatus(id: string, from: ProbeStatus, to: ProbeStatus, notify?: NotifyRequest): Promise<boolean> {
    return Promise.resolve(this.statusTx.immediate(id, from, to, notify));
  }

  pruneCycles(probeId: string, before: Date): Promise<number> {
    return Promise.resolve(this.prune.run(probeId, dbTime(before)).changes);
  }
}

/**
 * ProbeStore on PostgreSQL (../probes.ts): the Probes and ProbeCycles tables with the SQLite
 * store's rules (sqlite/probes.ts): the same texts for times and subnets, a name taken answered as
 * false, a status moved only from the status given (with its notice in the same transaction). A
 * cycle's bookkeeping is written by `recordCycleOn`, on the cycle's own transaction
 * (PostgresPresenceStore.applyOn), so that it commits with the cycle or not at all.
 */
import type { PoolClient } from 'pg';
import { dbTime } from '../../time.js';
import type { NotifyRequest } from '../outbox.js';
import type { AppliedCycle, NewProbe, ProbeRecord, ProbeStatus, ProbeStore } from '../probes.js';
import type { PostgresOutboxStore } from './outbox.js';
import type { PostgresPool } from './pool.js';
import { record, type ProbeRow } from '../sqlite/probes.js';

const columns = `"prb_Id", "prb_Name", "prb_Site", "prb_CreatedAt", "prb_Subnets", "prb_LastCycleAt",
  "prb_LastCycleStartedAt", "prb_Status", "prb_SpooledCycles", "prb_DroppedCycles"`;

export class PostgresProbeStore implements ProbeStore {
  /** @param outbox where a status change's notice is written, in the change's transaction */
  constructor(
    private readonly store: PostgresPool,
    private readonly outbox?: Pick<PostgresOutboxStore, 'writeRequested'>,
  ) {}

  async create(probe: NewProbe): Promise<boolean> {
    const rows = await this.store.query(
      `INSERT INTO "Probes" ("prb_Id", "prb_Name", "prb_Site", "prb_TokenHash", "prb_CreatedAt")
       VALUES ($1, $2, $3, $4, $5) ON CONFLICT ("prb_Name") DO NOTHING RETURNING 1`,
      [probe.id, probe.name, probe.site, probe.tokenHash, dbTime(probe.createdAt)],
    );
    return rows.length > 0;
  }

  async list(): Promise<ProbeRecord[]> {
    return (await this.store.query<ProbeRow>(`SELECT ${columns} FROM "Probes" ORDER BY "prb_Name"`)).map(
      record,
    );
  }

  async get(id: string): Promise<ProbeRecord | undefined> {
    const rows = await this.store.query<ProbeRow>(`SELECT ${columns} FROM "Probes" WHERE "prb_Id" = $1`, [
      id,
    ]);
    return rows[0] === undefined ? undefined : record(rows[0]);
  }

  async tokenHash(id: string): Promise<Buffer | undefined> {
    const rows = await this.store.query<{ prb_TokenHash: Buffer }>(
      'SELECT "prb_TokenHash" FROM "Probes" WHERE "prb_Id" = $1',
      [id],
    );
    return rows[0]?.prb_TokenHash;
  }

  async delete(id: string): Promise<boolean> {
    return this.store.transaction(async (client) => {
      await client.query('DELETE FROM "ProbeCycles" WHERE "pcy_ProbeId" = $1', [id]);
      const { rowCount } = await client.query('DELETE FROM "Probes" WHERE "prb_Id" = $1', [id]);
      return (rowCount ?? 0) > 0;
    });
  }

  async hasCycle(probeId: string, cycleId: string): Promise<boolean> {
    const rows = await this.store.query(
      'SELECT 1 FROM "ProbeCycles" WHERE "pcy_ProbeId" = $1 AND "pcy_CycleId" = $2',
      [probeId, cycleId],
    );
    return rows.length > 0;
  }

  /**
   * A cycle's bookkeeping on `client`, inside the cycle's transaction. A cycleId stored already
   * (a second hub server applied it meanwhile) fails the primary key and so the whole cycle.
   */
  async recordCycleOn(client: Pick<PoolClient, 'query'>, cycle: AppliedCycle): Promise<void> {
    await client.query(
      'INSERT INTO "ProbeCycles" ("pcy_ProbeId", "pcy_CycleId", "pcy_AppliedAt") VALUES ($1, $2, $3)',
      [cycle.probeId, cycle.cycleId, dbTime(cycle.appliedAt)],
    );
    await client.query(
      `UPDATE "Probes" SET "prb_Subnets" = $1, "prb_LastCycleAt" = $2, "prb_LastCycleStartedAt" = $3,
         "prb_SpooledCycles" = $4, "prb_DroppedCycles" = "prb_DroppedCycles" + $5, "prb_Status" = 'online'
       WHERE "prb_Id" = $6`,
      [
        JSON.stringify(cycle.subnets),
        dbTime(cycle.appliedAt),
        // Millisecond precision for the order check (storage text has seconds), as on SQLite.
        cycle.startedAt.toISOString(),
        cycle.spooledCycles,
        cycle.droppedCycles,
        cycle.probeId,
      ],
    );
  }

  async setStatus(id: string, from: ProbeStatus, to: ProbeStatus, notify?: NotifyRequest): Promise<boolean> {
    return this.store.transaction(async (client) => {
      const { rowCount } = await client.query(
        'UPDATE "Probes" SET "prb_Status" = $1 WHERE "prb_Id" = $2 AND "prb_Status" = $3',
        [to, id, from],
      );
      if ((rowCount ?? 0) === 0) return false;
      if (notify !== undefined) {
        if (this.outbox === undefined) throw new Error("a probe's notice needs the outbox");
        await this.outbox.writeRequested(notify, client);
      }
      return true;
    });
  }

  async pruneCycles(probeId: string, before: Date): Promise<number> {
    const rows = await this.store.query<{ n: number }>(
      `WITH gone AS (DELETE FROM "ProbeCycles" WHERE "pcy_ProbeId" = $1 AND "pcy_AppliedAt" < $2 RETURNING 1)
       SELECT count(*)::bigint AS n FROM gone`,
      [probeId, dbTime(before)],
    );
    return rows[0]?.n ?? 0;
  }
}

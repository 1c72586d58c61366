/**
 * The PostgreSQL store: every part over one pool, the change tracking that feeds the caches (this
 * server's commits exactly, the other servers' through the change channel), and the link between
 * the servers of the database (messages, job locks).
 */
import { randomUUID } from 'node:crypto';
import type { Store } from '../index.js';
import type { DeviceStore } from '../devices.js';
import type { ServerLink } from '../servers.js';
import { PostgresChangeLog } from './change-log.js';
import { PostgresChangeTracking } from './change-tracking.js';
import { PostgresDeviceStore } from './devices.js';
import { PostgresEventLog } from './event-log.js';
import { PostgresLeaderLock } from './leader.js';
import { PostgresBackupStore } from './backup.js';
import { PostgresCompatStore } from './compat.js';
import { PostgresProbeStore } from './probes.js';
import { PostgresReadouts } from './readouts.js';
import { PostgresChangeChannel } from './notify.js';
import { PostgresOutboxStore } from './outbox.js';
import { openPostgres, type PostgresPool, type StoreLog } from './pool.js';
import { PostgresPresenceStore } from './presence.js';
import { PostgresWatchStore } from './watch.js';

/** The store with its PostgreSQL parts as they are (tests reach the pool and tracking through it). */
export interface PostgresStore extends Store {
  readonly pool: PostgresPool;
  readonly changes: PostgresChangeTracking;
  readonly servers: ServerLink;
}

/**
 * The device store: PostgresDeviceStore's reads and writes, and the change readers of this
 * server's tracking (its own commits exactly, the other servers' through the change channel). The
 * kept counts are recounted after any change the tracking hears of, another server's included.
 */
function deviceStore(base: PostgresDeviceStore, changes: PostgresChangeTracking): DeviceStore {
  changes.onChange(() => {
    base.invalidateCounts();
  });
  return {
    resolveMac: (mac) => base.resolveMac(mac),
    loadAliases: () => base.loadAliases(),
    merge: (to, from, now) => base.merge(to, from, now),
    split: (mac, alias, now) => base.split(mac, alias, now),
    get: (mac, period, now) => base.get(mac, period, now),
    getTimed: (mac, period, now) => base.getTimed(mac, period, now),
    changeReader: () => changes.reader(),
    create: (mac, values, now) => base.create(mac, values, now),
    update: (mac, values) => base.update(mac, values),
    updateResolved: (given, values) => base.updateResolved(given, values),
    delete: (mac) => base.delete(mac),
    deleteEvents: (mac) => base.deleteEvents(mac),
    resetProps: (mac) => base.resetProps(mac),
    copy: (from, to) => base.copy(from, to),
    bulkEdit: (macs, edit) => base.bulkEdit(macs, edit),
    listChildren: (mac) => base.listChildren(mac),
    stats: (mac, period, now) => base.stats(mac, period, now),
    listDevices: (query, page) => base.listDevices(query, page),
    listOrder: (query) => base.listOrder(query),
    listItems: (macs) => base.listItems(macs),
    searchTexts: (macs) => base.searchTexts(macs),
    totals: () => base.totals(),
    counts: () => base.counts(),
    listEvents: (mac, period, now, page) => base.listEvents(mac, period, now, page),
    listSessions: (mac, period, now, page) => base.listSessions(mac, period, now, page),
    loadNames: () => base.loadNames(),
    getName: (mac) => base.getName(mac),
    resolveName: (mac, decide) => base.resolveName(mac, decide),
  };
}

export interface PostgresStoreOptions {
  readonly log?: StoreLog;
  /** This server's id among the servers of the database (default: a random one). */
  readonly serverId?: string;
  /** First delay before the change listener reconnects (notify.ts; default 500 ms). */
  readonly reconnectMs?: number;
  /** How often the change log is read without a hint (change-log.ts; default 1 s). */
  readonly changeLogPollMs?: number;
}

/** The hint a server sends after its commits: read the change log now (change-log.ts). */
const changeHint = { changeLog: true } as const;

function isChangeHint(body: unknown): boolean {
  return typeof body === 'object' && body !== null && (body as { changeLog?: unknown }).changeLog === true;
}

/**
 * Opens the store at `url`: the pool, the migrations, the change listener (LISTEN), every part.
 * Rejects with STORE_UNAVAILABLE when the database cannot be reached.
 */
export async function openPostgresStore(
  url: string,
  options: PostgresStoreOptions = {},
): Promise<PostgresStore> {
  const serverId = options.serverId ?? randomUUID();
  const pool = await openPostgres(url, { log: options.log, serverId });
  const changes = new PostgresChangeTracking();
  const messageListeners = new Set<(body: unknown) => void>();
  const channel = new PostgresChangeChannel(pool, {
    serverId,
    log: options.log,
    ...(options.reconnectMs === undefined ? {} : { reconnectMs: options.reconnectMs }),
    onChange: (change) => {
      if (change.kind === 'message' && isChangeHint(change.body)) {
        changeLog.read().catch(() => undefined); // the timer reads again
        return;
      }
      if (changes.remote(change) || change.kind !== 'message') return;
      for (const listener of messageListeners) listener(change.body);
    },
  });
  // The other servers' writes come from the change log, read on their hint and on a timer.
  const changeLog = new PostgresChangeLog(pool, {
    serverId,
    log: options.log,
    onChanged: (macs, seen) => {
      changes.changed(macs, seen);
    },
    onEverything: () => {
      changes.everything();
    },
    sendHint: () => channel.hint(changeHint),
    ...(options.changeLogPollMs === undefined ? {} : { pollMs: options.changeLogPollMs }),
  });
  pool.onCommitted = ({ macs, seen }) => {
    changes.changed(macs, seen);
    changeLog.committed();
  };
  try {
    await channel.start();
    await changeLog.start();
  } catch (err) {
    await channel.stop();
    await changeLog.stop();
    await pool.close();
    throw err;
  }
  const locks = new Set<PostgresLeaderLock>();
  const servers: ServerLink = {
    serverId,
    send: (body) => channel.publish(body),
    onMessage(listener) {
      messageListeners.add(listener);
      return () => {
        messageListeners.delete(listener);
      };
    },
    lock(name, onLost) {
      const lock = new PostgresLeaderLock(pool, name, {
        log: options.log,
        ...(onLost === undefined ? {} : { onLost }),
      });
      locks.add(lock);
      return lock;
    },
  };
  return postgresStore(pool, changes, servers, async () => {
    await changeLog.stop();
    await channel.stop();
    await Promise.all([...locks].map((lock) => lock.release()));
  });
}

/** The parts over an open pool; `stop` ends what lives beside the pool (listener, locks). */
export function postgresStore(
  pool: PostgresPool,
  changes: PostgresChangeTracking,
  servers: ServerLink,
  stop: () => Promise<void> = () => Promise.resolve(),
): PostgresStore {
  const outbox = new PostgresOutboxStore(pool);
  const probes = new PostgresProbeStore(pool, outbox);
  const presence = new PostgresPresenceStore(pool, outbox, probes);
  const devices = deviceStore(new PostgresDeviceStore(pool), changes);
  let open = true;
  return {
    pool,
    changes,
    servers,
    devices,
    presence,
    watch: new PostgresWatchStore(pool, presence),
    eventLog: new PostgresEventLog(pool),
    compat: new PostgresCompatStore(pool),
    outbox,
    probes,
    readouts: new PostgresReadouts(pool),
    backup: new PostgresBackupStore(pool),
    isOpen: () => open,
    async health() {
      if (!open) return 'closed';
      try {
        await pool.query('SELECT 1');
        return 'ok';
      } catch {
        return 'down';
      }
    },
    async close() {
      if (!open) return;
      open = false;
      await stop();
      await pool.close();
    },
  };
}

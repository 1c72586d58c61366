/**
 * The hub's side of probes: probe admin (tokens made here, stored as SHA-256 hashes,
 * compared in constant time), the application of an uploaded cycle with the scanner's own state
 * machine and presence apply, and the offline watch.
 *
 * A cycle is applied like a local one: load, plan and apply run synchronously (no API write slips
 * in between), in one transaction with its notifications (the alert outbox: alerts are decided at
 * the hub only) and its cycleId. Its scope is the probe's: devices whose address lies in the
 * cycle's subnets and that were last seen at the probe's site (sites.ts); the devices of every
 * other site are not looked at. Cycles of all probes are applied one at a time, each probe's in its
 * order: a cycle that started before the probe's last applied one is refused (409), a repeated
 * cycleId answers as applied and changes nothing.
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config, ProbeNoticeType } from '../config.js';
import type { DeviceStore } from '../store/devices.js';
import type { NotifyRequest } from '../store/outbox.js';
import type { PresenceExtras, PresenceStore } from '../store/presence.js';
import type { PresenceChanges } from '../devices/presence.js';
import { DomainError } from '../errors.js';
import type { ChangeFeed } from '../events.js';
import { PreparedNames } from '../names/namer.js';
import type { DeviceNames } from '../names/resolver.js';
import { mergeSightings } from '../scanner/discovery.js';
import { prefix64 } from '../scanner/ipv6.js';
import { MacStep, type DhcpIdentity } from '../scanner/macs.js';
import { appliedMessage, withLinks } from '../scanner/scanner.js';
import { planCycle, type PlannedEvent } from '../scanner/state-machine.js';
import { inSubnet } from '../scanner/subnets.js';
import type { ProbeRecord, ProbeStatus, ProbeStore } from '../store/probes.js';
import { isRandomMac } from '../validation.js';
import { checkCycle, type CycleUpload, type ProbeCycle } from './cycle.js';
import { scopeToSite, siteMarks } from './sites.js';

export type HubConfig = Pick<
  Config,
  | 'SCAN_MISSES_BEFORE_ABSENT'
  | 'SLEEP_MINUTES'
  | 'FLAP_THRESHOLD'
  | 'FLAP_WINDOW_MINUTES'
  | 'RANDOM_MAC_LINK'
  | 'NOTIFY_RANDOM_MAC'
  | 'PROBE_OFFLINE_MINUTES'
>;

/** What became of an upload (netkeep_probe_cycles_total's `outcome`). */
export type CycleOutcome = 'applied' | 'repeated' | 'failed' | 'refused';

export interface HubNotifications {
  request(events: readonly PlannedEvent[], now: Date): NotifyRequest | undefined;
  noticeRequest(
    type: ProbeNoticeType,
    probe: { readonly name: string; readonly site: string },
    info: string,
    now: Date,
  ): NotifyRequest | undefined;
}

export interface ProbeHubOptions {
  readonly store: ProbeStore;
  /** What a cycle reads of the device store: its aliases and names (MacStep, PreparedNames). */
  readonly devices: Pick<DeviceStore, 'loadAliases' | 'loadNames'>;
  /** Where a probe's cycle is read and written. */
  readonly presence: PresenceStore;
  readonly config: HubConfig;
  readonly logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  readonly feed?: ChangeFeed;
  readonly notifications?: HubNotifications;
  /** Clock (tests control it). Default: the system clock. */
  readonly now?: () => Date;
  /** Each upload's outcome (metrics). */
  readonly onCycle?: (probe: ProbeRecord, outcome: CycleOutcome) => void;
  /** Test seam: how often the offline watch looks, in ms. Default 15 s. */
  readonly testOnlyCheckMs?: number;
}

/** A probe as GET /probes shows it. */
export interface ProbeView {
  readonly id: string;
  readonly name: string;
  readonly site: string;
  readonly subnets: readonly string[];
  readonly createdAt: string;
  readonly lastCycleAt: string | null;
  readonly status: ProbeStatus;
  readonly spooledCycles: number;
  readonly droppedCycles: number;
}

export interface CycleAnswer {
  readonly applied: boolean;
  /** The cycleId had been applied before: nothing changed. */
  readonly repeated: boolean;
  readonly devicesSeen: number;
  readonly newDevices: number;
}

/** A probe token: `<probe id>.<secret>`; only the secret's hash is stored. */
const tokenPattern = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.([A-Za-z0-9_-]{43})$/;

const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

const emptyChanges: PresenceChanges = {
  newDevices: [],
  updates: [],
  events: [],
  openSessions: [],
  closeSessions: [],
  scanState: [],
};

export function probeView(probe: ProbeRecord): ProbeView {
  return {
    id: probe.id,
    name: probe.name,
    site: probe.site,
    subnets: probe.subnets,
    createdAt: probe.createdAt.toISOString(),
    lastCycleAt: probe.lastCycleAt?.toISOString() ?? null,
    status: probe.status,
    spooledCycles: probe.spooledCycles,
    droppedCycles: probe.droppedCycles,
  };
}

export class ProbeHub {
  private readonly macs: MacStep;
  private readonly now: () => Date;
  /** Cycles are applied one at a time (the tail of the queue). */
  private queue: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  /** Silence is counted from here at the earliest: a hub that was down did not hear anyone. */
  private readonly startedAt: number;
  private checking: Promise<void> | undefined;

  constructor(private readonly options: ProbeHubOptions) {
    this.macs = new MacStep(options.devices, options.config.RANDOM_MAC_LINK);
    this.now = options.now ?? (() => new Date());
    this.startedAt = this.now().getTime();
  }

  /** Adds a probe; its token is returned this once. `conflict` when the name is taken. */
  async create(name: string, site: string): Promise<{ id: string; token: string }> {
    const id = randomUUID();
    const secret = randomBytes(32).toString('base64url');
    const created = await this.options.store.create({
      id,
      name,
      site,
      tokenHash: sha256(secret),
      createdAt: this.now(),
    });
    if (!created)
      throw new DomainError('conflict', `A probe named '${name}' exists already.`, {
        code: 'PROBE_NAME_TAKEN',
      });
    this.options.logger.info({ event: 'probe-created', probe: name, site, id }, 'probe created');
    return { id, token: `${id}.${secret}` };
  }

  async list(): Promise<ProbeView[]> {
    return (await this.options.store.list()).map(probeView);
  }

  /** Removes a probe: its token is refused from the next request on. */
  async remove(id: string): Promise<void> {
    if (!(await this.options.store.delete(id.toLowerCase())))
      throw new DomainError('not-found', 'No probe has this id.', { code: 'PROBE_NOT_FOUND' });
    this.options.logger.info({ event: 'probe-deleted', id }, 'probe deleted; its token is revoked');
  }

  /** The probe a token belongs to; undefined for anything else (compared in constant time). */
  async authenticate(token: string): Promise<ProbeRecord | undefined> {
    const match = tokenPattern.exec(token);
    if (match?.[1] === undefined || match[2] === undefined) return undefined;
    // Hashed whether or not the probe exists: the answer's time tells nothing about the id either.
    const given = sha256(match[2]);
    const stored = await this.options.store.tokenHash(match[1]);
    if (stored?.length !== 32) return undefined;
    if (!timingSafeEqual(given, stored)) return undefined;
    return this.options.store.get(match[1]);
  }

  /**
   * Applies one uploaded cycle of `probe` (checked first: `invalid` and nothing changes). Cycles
   * are applied one at a time, in the order they arrive.
   */
  applyCycle(probe: ProbeRecord, upload: CycleUpload): Promise<CycleAnswer> {
    const run = this.queue.then(() => this.applyOne(probe, upload));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async applyOne(authenticated: ProbeRecord, upload: CycleUpload): Promise<CycleAnswer> {
    let cycle: ProbeCycle;
    try {
      cycle = checkCycle(upload, this.now());
    } catch (err) {
      this.options.onCycle?.(authenticated, 'refused');
      throw err;
    }
    const { store } = this.options;
    if (await store.hasCycle(authenticated.id, cycle.cycleId)) {
      this.options.onCycle?.(authenticated, 'repeated');
      return { applied: false, repeated: true, devicesSeen: 0, newDevices: 0 };
    }
    // Read again: the probe may have been deleted, or have moved on, while this cycle waited.
    const probe = await store.get(authenticated.id);
    if (probe === undefined)
      throw new DomainError('not-found', 'This probe has been deleted.', { code: 'PROBE_NOT_FOUND' });
    if (probe.lastCycleStartedAt !== null && cycle.startedAt.getTime() < probe.lastCycleStartedAt.getTime()) {
      this.options.onCycle?.(probe, 'refused');
      throw new DomainError(
        'conflict',
        "This cycle started before the probe's last applied cycle: cycles are applied in the probe's order.",
        { code: 'CYCLE_OUT_OF_ORDER' },
      );
    }
    const failed = cycle.errors.length > 0;
    const answer = failed ? await this.recordFailed(probe, cycle) : await this.applyPlanned(probe, cycle);
    this.options.onCycle?.(probe, failed ? 'failed' : 'applied');
    await store.pruneCycles(probe.id, new Date(this.now().getTime() - 31 * 86_400_000));
    return answer;
  }

  /** The probe's notice and cycle bookkeeping, written in the cycle's transaction. */
  private bookkeeping(probe: ProbeRecord, cycle: ProbeCycle, now: Date): PresenceExtras {
    const notice =
      probe.status === 'offline'
        ? this.options.notifications?.noticeRequest(
            'Probe Online',
            probe,
            `site ${probe.site}: reporting again`,
            now,
          )
        : undefined;
    return {
      probeCycle: {
        probeId: probe.id,
        cycleId: cycle.cycleId,
        startedAt: cycle.startedAt,
        appliedAt: now,
        subnets: cycle.subnets,
        spooledCycles: cycle.spooledCycles,
        droppedCycles: cycle.droppedCycles,
      },
      notices: notice === undefined ? [] : [notice],
    };
  }

  /** A cycle that failed at the probe: its devices are left as they are; it counts as contact. */
  private async recordFailed(probe: ProbeRecord, cycle: ProbeCycle): Promise<CycleAnswer> {
    await this.options.presence.applyPresence(emptyChanges, this.bookkeeping(probe, cycle, this.now()));
    this.options.logger.warn(
      { event: 'probe-cycle-failed', probe: probe.name, errors: cycle.errors },
      "a probe's cycle failed there; its devices are left as they are",
    );
    return { applied: false, repeated: false, devicesSeen: 0, newDevices: 0 };
  }

  /**
   * Load, plan and apply run without a turn of the event loop between them (the SQLite store
   * answers at once; an API write waits for its group commit on the next turn).
   */
  private async applyPlanned(probe: ProbeRecord, cycle: ProbeCycle): Promise<CycleAnswer> {
    const { config } = this.options;
    // Events carry the probe's time (a spooled cycle keeps its own); the order check keeps it monotonic.
    const now = cycle.finishedAt;
    const observations = mergeSightings([cycle.result]);
    // Only what this cycle may judge is read: its site's devices, and the devices it saw (by their
    // own MAC or an alias), wherever they were last. Every other site's devices stay unread.
    const { devices } = this.options;
    const aliases = await devices.loadAliases();
    const wanted = new Set<string>();
    for (const mac of observations.keys()) wanted.add(aliases.get(mac) ?? mac);
    const flapSince = new Date(now.getTime() - config.FLAP_WINDOW_MINUTES * 60_000);
    const { presence } = this.options;
    const known = await presence.loadSitePresence(probe.site, [...wanted], flapSince);
    const leases = new Map<string, DhcpIdentity>();
    for (const [mac, clientId] of cycle.clientIds) {
      const name = cycle.names.get(mac);
      leases.set(mac, { clientId, hostname: name?.source === 'dhcp' ? name.name : '' });
    }
    const macs = await this.macs.run(
      observations,
      new Set(known.keys()),
      leases.size > 0 ? leases : undefined,
      now,
    );
    const seen = new Set(macs.observations.keys());
    // A new MAC linked to a device of another site (random MACs): that device is read too.
    const linked = [...seen].filter((mac) => !known.has(mac));
    if (linked.length > 0)
      for (const [mac, device] of await presence.loadSitePresence(null, linked, flapSince))
        known.set(mac, device);
    const ipv6Prefixes = new Set<string>();
    for (const observation of macs.observations.values())
      for (const address of observation.ipv6 ?? [])
        if (!address.toLowerCase().startsWith('fe80')) ipv6Prefixes.add(prefix64(address));
    const planned = planCycle({
      known: scopeToSite(known, seen, new Set([probe.site])),
      observations: macs.observations,
      missesBeforeAbsent: config.SCAN_MISSES_BEFORE_ABSENT,
      inScope: (ip) =>
        ip.includes(':') ? safePrefixIn(ip, ipv6Prefixes) : cycle.subnets.some((cidr) => inSubnet(ip, cidr)),
      sleepMinutes: config.SLEEP_MINUTES,
      flapThreshold: config.FLAP_THRESHOLD,
      flapWindowMinutes: config.FLAP_WINDOW_MINUTES,
      now,
    });
    // The probe's names go through the naming rules, as a local lookup's would.
    const results = new Map<string, DeviceNames>();
    for (const [mac, found] of cycle.names)
      results.set(mac, { candidates: [found], fqdn: null, lease: undefined });
    const named =
      results.size > 0
        ? await new PreparedNames({ results, errors: [] }, this.options.devices).apply(planned)
        : planned;
    const withLinked = withLinks(named, macs, known, now);
    const plan = { ...withLinked, sites: siteMarks(seen, known, probe.site, probe.name) };
    const notified = config.NOTIFY_RANDOM_MAC
      ? plan.events
      : plan.events.filter((e) => e.type !== 'New Device' || !isRandomMac(e.mac));
    await presence.applyPresence(plan, {
      ...this.bookkeeping(probe, cycle, this.now()),
      notify: this.options.notifications?.request(notified, now),
    });
    this.options.logger.info(
      { event: 'probe-cycle', probe: probe.name, site: probe.site, ...plan.counts },
      "a probe's cycle applied",
    );
    this.options.feed?.publish('scan-applied', appliedMessage(plan, known));
    return {
      applied: true,
      repeated: false,
      devicesSeen: observations.size,
      newDevices: plan.counts.newDevices,
    };
  }

  /** Starts the offline watch. */
  start(): void {
    const every = this.options.testOnlyCheckMs ?? 15_000;
    this.timer = setInterval(() => {
      this.checking ??= this.checkOffline()
        .then(() => undefined)
        .catch((err: unknown) => {
          this.options.logger.error({ event: 'probe-offline-check-failed', err }, 'the offline watch failed');
        })
        .finally(() => {
          this.checking = undefined;
        });
    }, every);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.checking;
    await this.queue;
  }

  /**
   * Marks offline every online probe silent for PROBE_OFFLINE_MINUTES (counted from this hub's
   * start at the earliest), with one `Probe Offline`
   * notice each (in the same transaction). Its devices are left as they are: nobody looked.
   */
  async checkOffline(): Promise<number> {
    const now = this.now();
    const before = now.getTime() - this.options.config.PROBE_OFFLINE_MINUTES * 60_000;
    let marked = 0;
    for (const probe of await this.options.store.list()) {
      if (probe.status !== 'online' || probe.lastCycleAt === null) continue;
      // After a hub outage the probes get PROBE_OFFLINE_MINUTES to deliver their spools.
      if (Math.max(probe.lastCycleAt.getTime(), this.startedAt) > before) continue;
      const moved = await this.options.store.setStatus(
        probe.id,
        'online',
        'offline',
        this.options.notifications?.noticeRequest(
          'Probe Offline',
          probe,
          `site ${probe.site}: no cycle for ${this.options.config.PROBE_OFFLINE_MINUTES} minutes; its devices are left as they were`,
          now,
        ),
      );
      if (!moved) continue;
      marked++;
      this.options.logger.warn(
        { event: 'probe-offline', probe: probe.name, site: probe.site },
        'a probe is offline; its devices keep their state',
      );
    }
    return marked;
  }
}

function safePrefixIn(ip: string, prefixes: ReadonlySet<string>): boolean {
  try {
    return prefixes.has(prefix64(ip));
  } catch {
    return false; // not an address: never judged
  }
}

/**
 * The presence scan loop. Off unless SCAN_SUBNETS is set; then one cycle every SCAN_INTERVAL
 * seconds (measured between cycle starts). One cycle at a time: a cycle that overruns makes the
 * next one wait, and `runNow()` while one runs is a 409. A cycle discovers every subnet (one after
 * the other, to keep the ARP load on the LAN low), merges what it saw, and applies the state
 * machine's plan in one transaction. If any subnet's discovery fails the whole cycle fails and
 * changes no presence: applying a partial view would mark every device of the failed subnet as
 * gone. History retention (HISTORY_DAYS) is not the loop's job: see retention.ts.
 */
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { ChangeFeed } from '../events.js';
import type { DeviceStore } from '../store/devices.js';
import type { PresenceStore } from '../store/presence.js';
import type { NotifyRequest } from '../store/outbox.js';
import type { MemoryWrite } from '../store/watch.js';
import type { JobLock } from '../store/servers.js';
import type { KnownDevice } from '../devices/presence.js';
import { DomainError } from '../errors.js';
import {
  discoverSubnet,
  DiscoveryError,
  mergeSightings,
  type RunTool,
  type ScanToolName,
  type SubnetResult,
} from './discovery.js';
import { discoverIpv6, prefix64 } from './ipv6.js';
import type { PreparedNames, SeenDevice } from '../names/namer.js';
import { linkInfo, MacStep, mapAliases, type DhcpIdentity } from './macs.js';
import { planCycle, type PlannedEvent, type ScanPlan } from './state-machine.js';
import { isRandomMac } from '../validation.js';
import { scopeToSite, siteMarks } from '../probes/sites.js';
import { parseScanSubnets, subnetScope, type ScanSubnet } from './subnets.js';
import type { CycleSummary } from './summary.js';

export type { CycleSummary } from './summary.js';

export type ScannerConfig = Pick<
  Config,
  | 'SCAN_SUBNETS'
  | 'SCAN_INTERVAL'
  | 'SCAN_MISSES_BEFORE_ABSENT'
  | 'SCAN_TOOL'
  | 'SCAN_TIMEOUT_MS'
  | 'SLEEP_MINUTES'
  | 'FLAP_THRESHOLD'
  | 'FLAP_WINDOW_MINUTES'
  | 'SCAN_IPV6'
  | 'RANDOM_MAC_LINK'
  | 'NOTIFY_RANDOM_MAC'
>;

export interface ScannerOptions {
  /** The device part of the store: aliases (the alias step, naming's lookups). */
  readonly devices: DeviceStore;
  /** The cycle's reads and writes. */
  readonly presence: PresenceStore;
  readonly config: ScannerConfig;
  readonly logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Runs arp-scan / nmap; in production the shared tool runner. */
  readonly runTool: RunTool;
  /** Clock for stored times and the summary (tests control it). Default: the system clock. */
  readonly now?: () => Date;
  /** Test seam: the loop's interval in milliseconds instead of SCAN_INTERVAL seconds. */
  readonly testOnlyIntervalMs?: number;
  /**
   * Why an interface cannot be scanned now, checked before each subnet's discovery (a message
   * fails the cycle); in production `interfaceProblem` (link.ts). Default: no check.
   */
  readonly checkInterface?: (iface: string) => string | undefined;
  /**
   * Whether arp-scan is installed (the runner finds binaries once, at start): with SCAN_TOOL=auto,
   * nmap -sn is used when it is not. Default: installed.
   */
  readonly arpScanInstalled?: boolean;
  /** Where applied cycles and finished cycles are published (live streams, metrics, MQTT state). */
  readonly feed?: ChangeFeed;
  /**
   * The alert outbox: given the cycle's events inside the cycle's transaction (before COMMIT), so
   * that the cycle and its notifications are stored together or not at all.
   */
  readonly notifications?: { request(events: readonly PlannedEvent[], now: Date): NotifyRequest | undefined };
  /**
   * Automatic naming (src/names): looks the seen devices up before the cycle's transaction, and
   * puts the names found into the plan inside it.
   */
  readonly names?: {
    prepare(seen: ReadonlyMap<string, SeenDevice>, now: Date, signal?: AbortSignal): Promise<PreparedNames>;
  };
  /**
   * SITE_NAME: the cycle marks the devices it sees with this site and judges only
   * those of its own site (or of none). Undefined: sites are not looked at.
   */
  readonly site?: string;
  /** The security watch's step of each cycle (src/watch/cycle.ts); none: no watch. */
  readonly watch?: CycleWatch;
  /**
   * The DHCP leases' identity of each MAC (DHCP_LEASES), read before the cycle's transaction: the
   * automatic linking of random MACs uses them. Undefined: no lease files, no linking.
   */
  readonly leases?: () => Promise<ReadonlyMap<string, DhcpIdentity>>;
  /**
   * Several servers on one database: the lock of this site's scan loop. Only its holder runs
   * cycles; the others stand by and take over when the holder dies. Undefined: one server.
   */
  readonly leader?: JobLock;
}

/** What a cycle observed, kept to be stored later when the store could not take it. */
interface ObservedCycle {
  readonly observations: ReturnType<typeof mergeSightings>;
  readonly results: readonly SubnetResult[];
  readonly ipv6Prefixes: ReadonlySet<string>;
  readonly leases: ReadonlyMap<string, DhcpIdentity> | undefined;
  readonly naming: Awaited<ReturnType<NonNullable<ScannerOptions['names']>['prepare']>> | undefined;
  /** When it was observed: the time its events and presence are stored with. */
  readonly at: Date;
}

/** Cycles kept while the store is unavailable, at most (the oldest are dropped past it). */
const maxKeptCycles = 100;

/** This server stands by: another server on the database runs the site's scan loop. */
function standbyError(): DomainError {
  return new DomainError(
    'conflict',
    'Another server on this database runs the scan loop of this site; this one stands by.',
    { code: 'SCAN_STANDBY' },
  );
}

function storeUnavailable(err: unknown): boolean {
  return err instanceof DomainError && err.code === 'STORE_UNAVAILABLE';
}

/**
 * A narrow hook for the security watch: it sees each cycle's raw discovery
 * results (duplicate answers included) and adds events to the cycle's plan; its own writes run in
 * the cycle's transaction, so the cycle, the watch's memory and the notifications commit together.
 */
export interface CycleWatch {
  /** Before discovery, asynchronously (the subnets' gateways from the kernel's routes). Never throws. */
  prepare(subnets: readonly ScanSubnet[], signal: AbortSignal): Promise<void>;
  /** After the state machine: its events, and its memory's writes (committed with the cycle). */
  plan(
    results: readonly SubnetResult[],
    now: Date,
  ): Promise<{ events: readonly PlannedEvent[]; memory: readonly MemoryWrite[] }>;
}

/**
 * The plan with the alias step's writes: the links (DeviceMacs rows), their `MAC Linked` events
 * (notified only when the device's devAlertEvents is set: the rules decide) and the aliases seen.
 */
export function withLinks(
  plan: ScanPlan,
  macs: { readonly links: ScanPlan['links']; readonly aliasesSeen: readonly string[] },
  known: ReadonlyMap<string, { readonly alertEvents: boolean; readonly lastIP: string }>,
  now: Date,
): ScanPlan {
  const links = macs.links ?? [];
  if (links.length === 0 && macs.aliasesSeen.length === 0) return plan;
  const at = new Date(Math.floor(now.getTime() / 1000) * 1000);
  const ipOf = new Map(plan.updates.map((u) => [u.mac, u.lastIP]));
  const events: PlannedEvent[] = links.map((link) => ({
    mac: link.devMac,
    ip: ipOf.get(link.devMac) ?? known.get(link.devMac)?.lastIP ?? '',
    type: 'MAC Linked',
    dateTime: at,
    additionalInfo: linkInfo(link),
    pendingAlert: known.get(link.devMac)?.alertEvents === true ? 1 : 0,
  }));
  return {
    ...plan,
    events: [...plan.events, ...events],
    links: links.map((link) => ({ ...link, dateTime: at })),
    aliasesSeen: macs.aliasesSeen.map((mac) => ({ mac, dateTime: at })),
  };
}

/**
 * The change feed's `scan-applied` message of an applied cycle: its events, and the devices whose
 * presence it changed (new ones, and those whose presentLastScan flipped against `known`).
 */
export function appliedMessage(plan: ScanPlan, known: ReadonlyMap<string, KnownDevice>) {
  return {
    events: plan.events.map((e) => ({
      mac: e.mac,
      ip: e.ip,
      type: e.type,
      time: e.dateTime,
      additionalInfo: e.additionalInfo,
    })),
    presence: [
      ...plan.newDevices.map((d) => ({ mac: d.devMac, present: true })),
      ...plan.updates
        .filter((u) => known.get(u.mac)?.presentLastScan !== (u.presentLastScan === 1))
        .map((u) => ({ mac: u.mac, present: u.presentLastScan === 1 })),
    ],
  };
}

/** The discovery tool for a SCAN_TOOL setting: `auto` is arp-scan when installed, else nmap -sn. */
export function scanTool(setting: ScannerConfig['SCAN_TOOL'], arpScanInstalled: boolean): ScanToolName {
  if (setting === 'auto') return arpScanInstalled ? 'arp-scan' : 'nmap';
  return setting;
}

/** One subnet of a cycle discovered (live progress of a cycle started with runNow). */
export interface SubnetProgress {
  /** The subnet as configured, e.g. 192.168.1.0/24@eth0. */
  readonly subnet: string;
  /** Distinct MACs seen on it. */
  readonly devicesSeen: number;
}

export interface ScanStatus {
  /** False when SCAN_SUBNETS is empty. */
  readonly enabled: boolean;
  /** A cycle is running now. */
  readonly running: boolean;
  /** The last finished cycle; null before the first one. */
  readonly lastCycle: CycleSummary | null;
}

export class Scanner {
  readonly subnets: readonly ScanSubnet[];
  private readonly macs: MacStep;
  private readonly now: () => Date;
  private readonly intervalMs: number;
  private readonly tool: ScanToolName;
  private current: Promise<CycleSummary> | undefined;
  private abort: AbortController | undefined;
  private lastCycle: CycleSummary | null = null;
  private loopTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Cycles observed while the store could not be reached, oldest first: stored before the next. */
  private kept: ObservedCycle[] = [];
  /** Whether this server held the site's scan lock at its last look (options.leader); undefined before it. */
  private leading: boolean | undefined;

  /** Throws ConfigError when SCAN_SUBNETS is malformed. */
  constructor(private readonly options: ScannerOptions) {
    this.subnets = parseScanSubnets(options.config.SCAN_SUBNETS);
    this.macs = new MacStep(options.devices, options.config.RANDOM_MAC_LINK);
    this.now = options.now ?? (() => new Date());
    this.intervalMs = options.testOnlyIntervalMs ?? options.config.SCAN_INTERVAL * 1000;
    this.tool = scanTool(options.config.SCAN_TOOL, options.arpScanInstalled ?? true);
    if (this.enabled && options.config.SCAN_TOOL === 'auto' && this.tool === 'nmap')
      options.logger.warn({ event: 'scan-tool-fallback' }, 'arp-scan is not installed; using nmap -sn');
  }

  get enabled(): boolean {
    return this.subnets.length > 0;
  }

  /** Starts the loop (first cycle at once) when scanning is configured. */
  start(): void {
    if (this.stopped) return;
    if (this.enabled) this.scheduleLoop(0);
  }

  status(): ScanStatus {
    return { enabled: this.enabled, running: this.current !== undefined, lastCycle: this.lastCycle };
  }

  /**
   * Runs a cycle now and resolves with its summary. A `conflict` when scanning is not configured
   * or a cycle is already running; `command-failed` when the cycle failed (nothing was changed).
   */
  async runNow(onProgress?: (progress: SubnetProgress) => void): Promise<CycleSummary> {
    if (!this.enabled)
      throw new DomainError(
        'conflict',
        'Presence scanning is not configured: set SCAN_SUBNETS (cidr@interface).',
        { code: 'SCAN_NOT_CONFIGURED' },
      );
    if (this.options.leader !== undefined && this.current === undefined && !(await this.mayScan()))
      throw standbyError();
    const summary = await this.startCycle(onProgress);
    if (summary.errors.length > 0) {
      throw new DomainError(
        'command-failed',
        `The scan cycle failed and changed nothing: ${summary.errors[0] ?? ''}`,
        { code: 'SCAN_FAILED', reason: 'Scan Failed', details: summary.errors.join('\n') },
      );
    }
    return summary;
  }

  /**
   * Starts a cycle and returns at once (NetAlertX's trigger-scan): the same checks as `runNow`
   * (`conflict` when scanning is off or a cycle runs); the cycle's outcome is logged, as a scheduled
   * cycle's is, and shows in `status().lastCycle`.
   */
  trigger(): void {
    if (!this.enabled)
      throw new DomainError(
        'conflict',
        'Presence scanning is not configured: set SCAN_SUBNETS (cidr@interface).',
        { code: 'SCAN_NOT_CONFIGURED' },
      );
    this.startCycle().catch(() => {
      // A failed cycle is logged by cycle() and kept in lastCycle; nobody waits for this one.
    });
  }

  /** Graceful shutdown: no new cycles, the running discovery aborted, waits for it to settle. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.loopTimer);
    this.abort?.abort();
    await Promise.allSettled([this.current]);
  }

  private startCycle(onProgress?: (progress: SubnetProgress) => void): Promise<CycleSummary> {
    if (this.current)
      throw new DomainError('conflict', 'A scan cycle is already running; try again when it has finished.', {
        code: 'SCAN_RUNNING',
      });
    if (this.stopped)
      throw new DomainError('shutting-down', 'The scanner is shutting down.', {
        code: 'SHUTTING_DOWN',
        reason: 'Unavailable',
      });
    const run = this.cycle(onProgress).finally(() => {
      this.current = undefined;
    });
    this.current = run;
    return run;
  }

  private scheduleLoop(delayMs: number): void {
    this.loopTimer = setTimeout(() => void this.tick(), delayMs);
    this.loopTimer.unref();
  }

  /** One turn of the loop: run a cycle (or wait for a manual one), then schedule the next start. */
  private async tick(): Promise<void> {
    const started = performance.now();
    if (this.current) await this.current.catch(() => undefined);
    else if (await this.mayScan()) await this.startCycle().catch(() => undefined);
    if (this.stopped) return;
    // Interval between starts; an overrun starts the next cycle right after, never alongside.
    this.scheduleLoop(Math.max(0, started + this.intervalMs - performance.now()));
  }

  /**
   * Whether this server runs this round's cycle: always alone; with several servers, when it holds
   * the site's scan lock (taking it when free). While the database cannot be reached, the server
   * that scanned last keeps scanning, and keeps its cycles to store them when it is back.
   */
  private async mayScan(): Promise<boolean> {
    const leader = this.options.leader;
    if (leader === undefined) return true;
    let held: boolean;
    try {
      held = await leader.tryAcquire();
    } catch {
      return this.leading === true;
    }
    if (held !== this.leading) {
      this.options.logger.info(
        { event: held ? 'scan-leader' : 'scan-standby', site: this.options.site },
        held ? 'this server runs the scan loop of its site' : 'another server scans this site; standing by',
      );
      if (!held && this.kept.length > 0) {
        // Another server scans now: what this one kept would be stored twice over its cycles.
        this.options.logger.warn(
          { event: 'scan-kept-dropped', cycles: this.kept.length },
          'another server took over the scan loop; cycles kept while the store was unavailable are dropped',
        );
        this.kept = [];
      }
    }
    this.leading = held;
    return held;
  }

  private async cycle(onProgress?: (progress: SubnetProgress) => void): Promise<CycleSummary> {
    const startedAt = this.now();
    const clock = performance.now();
    const controller = new AbortController();
    this.abort = controller;
    const errors: string[] = [];
    const results: SubnetResult[] = [];
    // The /64 prefixes of the IPv6 neighbour tables read: the IPv6 half of the cycle's scope.
    const ipv6Prefixes = new Set<string>();
    await this.options.watch?.prepare(this.subnets, controller.signal);
    for (const subnet of this.subnets) {
      if (controller.signal.aborted) {
        errors.push('the cycle was aborted (shutdown)');
        break;
      }
      try {
        const result = await this.discover(subnet, controller.signal, ipv6Prefixes);
        results.push(result);
        onProgress?.({
          subnet: subnet.label,
          devicesSeen: new Set(result.sightings.map((sighting) => sighting.mac)).size,
        });
      } catch (err) {
        errors.push(err instanceof Error ? err.message : String(err));
      }
    }
    const observations = mergeSightings(results);
    let newDevices = 0;
    // Lease files are read before the transaction (file I/O); a failed read only means no linking.
    const leases =
      errors.length === 0 && this.options.config.RANDOM_MAC_LINK
        ? await this.options.leases?.().catch(() => undefined)
        : undefined;
    // Naming waits on the network, so it runs before the transaction; the names go into the plan.
    const names = this.options.names;
    const naming =
      errors.length === 0 && names !== undefined
        ? await this.options.devices.loadAliases().then(
            (aliases) =>
              names.prepare(
                // Named as devices: an alias's lookup names the device it belongs to.
                mapAliases(observations, aliases).observations,
                this.now(),
                controller.signal,
              ),
            (err: unknown) => {
              // The store is away: the cycle is still kept (below), its names looked up next time.
              if (storeUnavailable(err)) return undefined;
              throw err;
            },
          )
        : undefined;
    if (errors.length === 0) {
      const observed: ObservedCycle = { observations, results, ipv6Prefixes, leases, naming, at: this.now() };
      try {
        // The lock may have gone with its connection (the database restarted): take it again
        // before writing (STORE_UNAVAILABLE while the database is away: the cycle is kept).
        const leader = this.options.leader;
        if (leader !== undefined && !(await leader.tryAcquire())) throw standbyError();
        await this.storeKept();
        newDevices = await this.store(observed);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (storeUnavailable(err)) {
          this.keep(observed);
          errors.push(`the store is unavailable; the cycle is kept and stored when it is back: ${message}`);
        } else errors.push(`applying the cycle failed: ${message}`);
      }
    }
    if (this.abort === controller) this.abort = undefined;
    const finishedAt = this.now();
    const summary: CycleSummary = {
      startedAt: startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      durationMs: Math.round(performance.now() - clock),
      devicesSeen: observations.size,
      newDevices,
      errors,
      named: errors.length === 0 ? (naming?.named ?? 0) : 0,
      nameSourceErrors: [...(naming?.errors ?? [])],
    };
    this.lastCycle = summary;
    this.options.feed?.publish('scan-finished', summary);
    if (errors.length > 0)
      this.options.logger.error(
        { event: 'scan-cycle-failed', errors },
        'scan cycle failed; presence unchanged',
      );
    return summary;
  }

  /** Stores the cycles kept while the store was unavailable, oldest first (throws when it still cannot). */
  private async storeKept(): Promise<void> {
    while (this.kept[0] !== undefined) {
      await this.store(this.kept[0]);
      this.kept.shift();
      this.options.logger.info(
        { event: 'scan-kept-stored', left: this.kept.length },
        'a kept scan cycle was stored',
      );
    }
  }

  private keep(observed: ObservedCycle): void {
    this.kept.push(observed);
    if (this.kept.length > maxKeptCycles) this.kept.shift();
    this.options.logger.warn(
      { event: 'scan-cycle-kept', kept: this.kept.length },
      'the store is unavailable; the scan cycle is kept and stored when it is back',
    );
  }

  /** Loads, plans and applies one observed cycle in one transaction; its count of new devices. */
  private async store(observed: ObservedCycle): Promise<number> {
    const { observations, results, ipv6Prefixes, leases, naming } = observed;
    // Load, plan and apply run without a turn of the event loop between them (the SQLite store
    // answers at once; an API write waits for its group commit on the next turn), so no API
    // write can slip in between them.
    const { config, presence } = this.options;
    const now = observed.at;
    const known = await presence.loadPresence(new Date(now.getTime() - config.FLAP_WINDOW_MINUTES * 60_000));
    // Aliases and links first: the state machine sees devices, whichever MAC they used.
    const macs = await this.macs.run(observations, new Set(known.keys()), leases, now);
    const { site } = this.options;
    const seen = new Set(macs.observations.keys());
    const planned = planCycle({
      known: site === undefined ? known : scopeToSite(known, seen, new Set(['', site])),
      observations: macs.observations,
      missesBeforeAbsent: config.SCAN_MISSES_BEFORE_ABSENT,
      inScope: cycleScope(subnetScope(this.subnets), ipv6Prefixes),
      sleepMinutes: config.SLEEP_MINUTES,
      flapThreshold: config.FLAP_THRESHOLD,
      flapWindowMinutes: config.FLAP_WINDOW_MINUTES,
      now,
    });
    const linked = withLinks(naming ? await naming.apply(planned) : planned, macs, known, now);
    const watched = await this.options.watch?.plan(results, now);
    const events = watched ? [...linked.events, ...watched.events] : linked.events;
    const plan = {
      ...linked,
      events,
      ...(site !== undefined && { sites: siteMarks(seen, known, site, '') }),
    };
    const notifications = this.options.notifications;
    const notified = config.NOTIFY_RANDOM_MAC
      ? plan.events
      : plan.events.filter((e) => e.type !== 'New Device' || !isRandomMac(e.mac));
    await presence.applyPresence(plan, {
      memory: watched?.memory,
      notify: notifications?.request(notified, now),
    });
    this.options.logger.info(
      { event: 'scan-cycle', ...plan.counts, named: naming?.named ?? 0 },
      'scan cycle applied',
    );
    this.options.feed?.publish('scan-applied', appliedMessage(plan, known));
    return plan.counts.newDevices;
  }

  private discover(
    subnet: ScanSubnet,
    signal: AbortSignal,
    ipv6Prefixes: Set<string>,
  ): Promise<SubnetResult> {
    return discoverScanSubnet(subnet, signal, ipv6Prefixes, {
      runTool: this.options.runTool,
      tool: this.tool,
      config: this.options.config,
      checkInterface: this.options.checkInterface,
      logger: this.options.logger,
    });
  }
}

/** What one subnet's discovery needs (the scanner's, and a probe's: src/probes/probe.ts). */
export interface SubnetDiscovery {
  readonly runTool: RunTool;
  readonly tool: ScanToolName;
  readonly config: Pick<ScannerConfig, 'SCAN_TIMEOUT_MS' | 'SCAN_IPV6'>;
  readonly checkInterface?: (iface: string) => string | undefined;
  readonly logger: Pick<Logger, 'info'>;
}

/**
 * Discovers one subnet: the scan tool, then (SCAN_IPV6) the interface's IPv6 neighbours, whose /64
 * prefixes are added to `ipv6Prefixes` (the IPv6 half of the cycle's scope). Throws
 * DiscoveryError when the interface cannot be scanned or the tool fails.
 */
export async function discoverScanSubnet(
  subnet: ScanSubnet,
  signal: AbortSignal,
  ipv6Prefixes: Set<string>,
  options: SubnetDiscovery,
): Promise<SubnetResult> {
  const { tool, config, logger } = options;
  // A dead link makes the tools report "no hosts" with exit code 0: that is no result.
  const problem = options.checkInterface?.(subnet.iface);
  if (problem !== undefined)
    throw new DiscoveryError(subnet.label, tool, `cannot scan ${subnet.label}: ${problem}`);
  const sightings = await discoverSubnet(subnet, {
    runTool: options.runTool,
    tool,
    timeoutMs: config.SCAN_TIMEOUT_MS,
    signal,
  });
  if (!config.SCAN_IPV6) return { tool, sightings };
  const ipv6 = await discoverIpv6(subnet.iface, {
    runTool: options.runTool,
    timeoutMs: config.SCAN_TIMEOUT_MS,
    signal,
  });
  if (!ipv6.read) {
    logger.info(
      { event: 'scan-ipv6-skipped', interface: subnet.iface },
      `no IPv6 neighbours read on ${subnet.iface} (no IPv6 there, or ping/ip missing); IPv4 only`,
    );
    return { tool, sightings };
  }
  // Link-local addresses are in scope wherever a table was read (fe80::/64 is on every link).
  ipv6Prefixes.add(prefix64('fe80::'));
  for (const prefix of ipv6.prefixes) ipv6Prefixes.add(prefix);
  return { tool, sightings, neighbours: ipv6.neighbours };
}

/** IPv4 addresses by the cycle's subnets, IPv6 addresses by the prefixes of the tables it read. */
function cycleScope(
  ipv4: (ip: string) => boolean,
  ipv6Prefixes: ReadonlySet<string>,
): (ip: string) => boolean {
  return (ip) => {
    if (!ip.includes(':')) return ipv4(ip);
    try {
      return ipv6Prefixes.has(prefix64(ip));
    } catch {
      return false; // not an address: never judged
    }
  };
}

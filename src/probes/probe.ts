/**
 * Probe mode: PROBE_HUB_URL and PROBE_TOKEN make this netkeep a probe. It runs the scan loop
 * (the scanner's own discovery, SCAN_SUBNETS, every SCAN_INTERVAL) and names what it sees (the
 * name resolver and the naming rules), keeps no inventory, and hands each finished cycle to the
 * spool (spool.ts) and the uploader, which sends the spool to the hub oldest first: POST
 * /probes/cycles with the probe token. Connections go from the probe to the hub only.
 *
 * What the hub answers decides what happens to a spooled cycle:
 * - 200 (applied, or a repeated cycleId): removed from the spool;
 * - unreachable, 408, 429, 5xx: kept, sent again after a backoff (1 s doubling to 60 s, jittered);
 * - 403 (token wrong or revoked): kept, retried with the backoff at its longest: nothing is lost
 *   while the operator fixes the token;
 * - any other 4xx (the hub will never take it: malformed, out of order): removed and logged, so
 *   that one bad cycle cannot hold up every later one.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { mergeSightings, type Observation, type RunTool, type SubnetResult } from '../scanner/discovery.js';
import { discoverScanSubnet, scanTool, type ScanStatus } from '../scanner/scanner.js';
import { parseScanSubnets, type ScanSubnet } from '../scanner/subnets.js';
import type { CycleSummary } from '../scanner/summary.js';
import type { NameResolver } from '../names/resolver.js';
import { decideName } from '../names/rules.js';
import type { AutoSource, NameSourceError } from '../names/types.js';
import type { CycleUpload } from './cycle.js';
import { Spool } from './spool.js';

export type ProbeConfig = Pick<
  Config,
  | 'SCAN_SUBNETS'
  | 'SCAN_INTERVAL'
  | 'SCAN_TOOL'
  | 'SCAN_TIMEOUT_MS'
  | 'SCAN_IPV6'
  | 'NAME_REFRESH_MINUTES'
  | 'PROBE_HUB_URL'
  | 'PROBE_TOKEN'
  | 'PROBE_SPOOL_MAX'
  | 'DATA_DIR'
>;

export interface ProbeOptions {
  readonly config: ProbeConfig;
  readonly logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  readonly runTool: RunTool;
  readonly arpScanInstalled: boolean;
  readonly checkInterface?: (iface: string) => string | undefined;
  readonly resolver?: NameResolver;
  /** Test seam: the backoff's first delay in ms (default 1000; it doubles up to 60 times that). */
  readonly testOnlyBackoffMs?: number;
  /** Test seam: the loop's interval in milliseconds instead of SCAN_INTERVAL seconds. */
  readonly testOnlyIntervalMs?: number;
}

/** The uploader's state, for GET /nettools/scan. */
export interface UploadStatus {
  readonly hub: string;
  readonly spooledCycles: number;
  readonly droppedCycles: number;
  readonly lastUploadAt: string | null;
  readonly lastError: string | null;
}

const unnamed = { name: '(unknown)', source: '', fqdn: '', ip: '' };
/** The longest wait between two tries, as a multiple of the first. */
const maxBackoffFactor = 60;

export class Probe {
  readonly subnets: readonly ScanSubnet[];
  readonly spool: Spool;
  private readonly probeId: string;
  private readonly endpoint: URL;
  private readonly intervalMs: number;
  private readonly backoffMs: number;
  private lastCycle: CycleSummary | null = null;
  private running = false;
  private stopped = false;
  private abort = new AbortController();
  private loopTimer: NodeJS.Timeout | undefined;
  private uploadTimer: NodeJS.Timeout | undefined;
  private uploading: Promise<void> | undefined;
  private cycling: Promise<void> | undefined;
  private failures = 0;
  private lastUploadAt: Date | null = null;
  private lastError: string | null = null;
  /** Names found, per MAC, with when (looked up again after NAME_REFRESH_MINUTES). */
  private readonly names = new Map<
    string,
    { name: string; source: AutoSource | ''; clientId: string; at: number }
  >();

  constructor(private readonly options: ProbeOptions) {
    const { config } = options;
    this.subnets = parseScanSubnets(config.SCAN_SUBNETS);
    this.spool = new Spool(config.DATA_DIR, config.PROBE_SPOOL_MAX);
    this.probeId = config.PROBE_TOKEN.split('.', 1)[0] ?? '';
    const base = config.PROBE_HUB_URL.endsWith('/') ? config.PROBE_HUB_URL : `${config.PROBE_HUB_URL}/`;
    this.endpoint = new URL('probes/cycles', base);
    this.intervalMs = options.testOnlyIntervalMs ?? config.SCAN_INTERVAL * 1000;
    this.backoffMs = options.testOnlyBackoffMs ?? 1000;
  }

  status(): ScanStatus & { probe: UploadStatus } {
    return {
      enabled: this.subnets.length > 0,
      running: this.running,
      lastCycle: this.lastCycle,
      probe: {
        hub: this.endpoint.origin,
        spooledCycles: this.spool.size,
        droppedCycles: this.spool.dropped,
        lastUploadAt: this.lastUploadAt?.toISOString() ?? null,
        lastError: this.lastError,
      },
    };
  }

  start(): void {
    // Cycles spooled before a restart go first.
    this.kick();
    if (this.subnets.length > 0) this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.loopTimer);
    clearTimeout(this.uploadTimer);
    this.abort.abort();
    await Promise.allSettled([this.cycling, this.uploading]);
  }

  private schedule(delayMs: number): void {
    this.loopTimer = setTimeout(() => {
      const started = performance.now();
      this.cycling = this.cycle()
        .catch((err: unknown) => {
          this.options.logger.error({ event: 'probe-cycle-failed', err }, 'the probe cycle failed');
        })
        .finally(() => {
          this.cycling = undefined;
          if (!this.stopped) this.schedule(Math.max(0, started + this.intervalMs - performance.now()));
        });
    }, delayMs);
    this.loopTimer.unref();
  }

  /** One cycle: discover every subnet, name what was seen, spool it, wake the uploader. */
  private async cycle(): Promise<void> {
    this.running = true;
    const startedAt = new Date();
    const clock = performance.now();
    const tool = scanTool(this.options.config.SCAN_TOOL, this.options.arpScanInstalled);
    const errors: string[] = [];
    const results: SubnetResult[] = [];
    for (const subnet of this.subnets) {
      if (this.abort.signal.aborted) {
        errors.push('the cycle was aborted (shutdown)');
        break;
      }
      try {
        results.push(
          await discoverScanSubnet(subnet, this.abort.signal, new Set(), {
            runTool: this.options.runTool,
            tool,
            config: this.options.config,
            checkInterface: this.options.checkInterface,
            logger: this.options.logger,
          }),
        );
      } catch (err) {
        errors.push(err instanceof Error ? err.message : String(err));
      }
    }
    const observations = mergeSightings(results);
    const nameErrors = errors.length === 0 ? await this.name(observations) : [];
    const finishedAt = new Date();
    this.running = false;
    if (this.stopped && errors.length > 0) return; // a shutdown's partial cycle is not a cycle
    const upload: CycleUpload = {
      cycleId: randomUUID(),
      probeId: this.probeId,
      startedAt: startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      tool,
      subnets: this.subnets.map((s) => s.cidr),
      sightings: errors.length > 0 ? [] : this.sightings(observations),
      errors,
    };
    const dropped = this.spool.add(JSON.stringify(upload));
    if (dropped > 0)
      this.options.logger.warn(
        { event: 'probe-spool-dropped', dropped, max: this.options.config.PROBE_SPOOL_MAX },
        'the spool is full (PROBE_SPOOL_MAX): the oldest cycles were dropped',
      );
    this.lastCycle = {
      startedAt: startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      durationMs: Math.round(performance.now() - clock),
      devicesSeen: observations.size,
      newDevices: 0,
      errors,
      named: 0,
      nameSourceErrors: [...nameErrors],
    };
    this.options.logger.info(
      {
        event: 'probe-cycle',
        devicesSeen: observations.size,
        errors: errors.length,
        spooled: this.spool.size,
      },
      'probe cycle spooled',
    );
    this.kick();
  }

  /** Looks up the devices not named within NAME_REFRESH_MINUTES (never throws). */
  private async name(observations: ReadonlyMap<string, Observation>): Promise<readonly NameSourceError[]> {
    const resolver = this.options.resolver;
    if (resolver === undefined || !resolver.enabled) return [];
    const due = Date.now() - this.options.config.NAME_REFRESH_MINUTES * 60_000;
    const targets = [...observations]
      .filter(([mac]) => (this.names.get(mac)?.at ?? 0) <= due)
      .map(([mac, o]) => ({ mac, ip: o.ips[0] ?? '' }));
    if (targets.length === 0) return [];
    const round = await resolver.lookup(targets, this.abort.signal);
    for (const target of targets) {
      const found = round.results.get(target.mac);
      const decision = found === undefined ? undefined : decideName(unnamed, found.candidates);
      this.names.set(target.mac, {
        name: decision?.name ?? '',
        source: decision?.source ?? '',
        clientId: found?.lease?.clientId ?? '',
        at: Date.now(),
      });
    }
    // Memory bounded by what the network holds: MACs not seen this cycle are forgotten.
    for (const mac of this.names.keys()) if (!observations.has(mac)) this.names.delete(mac);
    return round.errors;
  }

  private sightings(observations: ReadonlyMap<string, Observation>): CycleUpload['sightings'] {
    const sightings: CycleUpload['sightings'] = [];
    for (const [mac, o] of observations) {
      const found = this.names.get(mac);
      const named = found !== undefined && found.name !== '' && found.source !== '';
      const extra = {
        ...(o.ipv6 !== undefined && o.ipv6.length > 0 && { ipv6: [...o.ipv6] }),
        ...(named && { name: found.name, nameSource: found.source }),
        ...(found !== undefined && found.clientId !== '' && { dhcpClientId: found.clientId }),
      };
      // One sighting per address: the hub merges them again, as mergeSightings does here.
      const ips = o.ips.length > 0 ? o.ips : [''];
      for (const ip of ips) sightings.push({ mac, ip, vendor: o.vendor, ...extra });
    }
    return sightings;
  }

  /** Wakes the uploader now (a new cycle, or the start). */
  private kick(): void {
    if (this.stopped || this.uploading !== undefined) return;
    clearTimeout(this.uploadTimer);
    this.uploading = this.drain().finally(() => {
      this.uploading = undefined;
    });
  }

  /** Sends the spool oldest first until it is empty or the hub does not take a cycle. */
  private async drain(): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      const next = this.spool.oldest();
      if (next === undefined) return;
      const dropped = this.spool.dropped;
      const body = JSON.stringify({
        ...(JSON.parse(next.body) as CycleUpload),
        spooledCycles: this.spool.size - 1,
        droppedCycles: dropped,
      });
      const outcome = await this.send(body);
      if (outcome === 'taken' || outcome === 'refused') {
        this.spool.remove(next.seq);
        if (outcome === 'taken') {
          this.spool.reportedDropped(dropped);
          this.lastUploadAt = new Date();
          this.lastError = null;
        }
        this.failures = 0;
        continue;
      }
      this.failures++;
      const factor =
        outcome === 'unauthorized' ? maxBackoffFactor : Math.min(maxBackoffFactor, 2 ** (this.failures - 1));
      const delay = this.backoffMs * factor * (0.5 + Math.random() / 2);
      this.uploadTimer = setTimeout(() => {
        this.kick();
      }, delay);
      this.uploadTimer.unref();
      return;
    }
  }

  private async send(body: string): Promise<'taken' | 'refused' | 'retry' | 'unauthorized'> {
    let status: number;
    let text: string;
    try {
      const response = await fetch(this.endpoint, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${this.options.config.PROBE_TOKEN}`,
          'content-type': 'application/json',
        },
        body,
        signal: AbortSignal.any([this.abort.signal, AbortSignal.timeout(60_000)]),
        redirect: 'error',
      });
      status = response.status;
      text = await response.text();
    } catch (err) {
      this.lastError = `hub unreachable: ${err instanceof Error ? err.message : String(err)}`;
      this.options.logger.warn(
        { event: 'probe-upload-failed', error: this.lastError },
        'upload failed; kept in the spool',
      );
      return 'retry';
    }
    if (status === 200) return 'taken';
    this.lastError = `hub answered ${status}: ${text.slice(0, 500)}`;
    if (status === 403) {
      this.options.logger.error(
        { event: 'probe-upload-unauthorized', status },
        'the hub refuses this probe token (revoked, or PROBE_TOKEN wrong); cycles are kept in the spool',
      );
      return 'unauthorized';
    }
    if (status === 408 || status === 429 || status >= 500) {
      this.options.logger.warn(
        { event: 'probe-upload-failed', status },
        'upload not taken; kept in the spool',
      );
      return 'retry';
    }
    this.options.logger.error(
      { event: 'probe-upload-refused', status, answer: text.slice(0, 500) },
      'the hub refused this cycle for good; it is dropped',
    );
    return 'refused';
  }
}

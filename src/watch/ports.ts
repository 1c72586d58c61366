/**
 * Ports Changed: every PORT_WATCH_MINUTES, `nmap -F` against each present
 * device with devWatchPorts, through the tool runner as background work (it never takes the slot
 * kept for requests, nor fills their queue). Each device's open ports replace its DevicePorts rows;
 * a difference from the previous scan is one `Ports Changed` event ("opened 22/tcp, 8080/tcp;
 * closed 80/tcp"), written with the ports and the notifications in one transaction. The first scan
 * of a device records its ports without an event. A failed scan of one device changes nothing of
 * it (its ports are not "all closed") and does not stop the others.
 */
import type { Logger } from 'pino';
import type { PlannedEvent } from '../devices/presence.js';
import type { OpenPort, WatchStore } from '../store/watch.js';
import { parseNmapXml, type NmapReport } from '../nettools/nmap-xml.js';
import { ipVersion } from '../validation.js';
import { cleanText } from './clean.js';
import { PeriodicRun } from './periodic.js';
import { publishWatchEvents, wholeSeconds, type WatchRunTool, type WatchSinks } from './tool.js';

/**
 * One host's scan: `nmap -F` (the 100 most common TCP ports), services named from nmap's port
 * table. No `-sV`: its probes wait on every silent port (37 s for one idle listener here), which
 * would hold a tool slot for minutes per device; product and version stay '' unless nmap reports them.
 */
export function portScanArgs(ips: readonly string[]): string[] {
  return ['-F', '-n', '-Pn', '--host-timeout', '120s', '-oX', '-', ...ips];
}

/**
 * Devices per nmap command: one process per device cost a fork/exec on the event loop each (200
 * devices, 200 spawns); a few addresses per command keep that down while one slow host only
 * delays its own group (--host-timeout bounds it).
 */
const devicesPerScan = 8;

/** The command's own limit, above nmap's --host-timeout. */
const scanTimeoutMs = 150_000;

/**
 * The open ports of `ip` in `nmap -oX` output. Throws when the output is not an nmap report, reports
 * an error, or does not hold the host (a scan that did not happen is not "no ports"). Ports out of
 * range, of another protocol or not open are skipped; texts are cleaned.
 */
export function parsePortScan(xml: string, ip: string): OpenPort[] {
  return openPorts(readReport(xml), ip);
}

/** The report of one nmap command; throws when it is not one, or reports an error. */
function readReport(xml: string): NmapReport {
  const report = parseNmapXml(xml);
  if (report.error !== null) throw new Error(cleanText(report.error));
  return report;
}

/** The open ports of `ip` in a report (see parsePortScan). */
function openPorts(report: NmapReport, ip: string): OpenPort[] {
  const host = report.hosts.find((h) => h.address === ip);
  if (host === undefined) throw new Error(`nmap reported no result for ${ip}`);
  const ports = new Map<string, OpenPort>();
  for (const p of host.ports) {
    if (!Number.isInteger(p.port) || p.port < 1 || p.port > 65535) continue;
    if (p.protocol !== 'tcp' && p.protocol !== 'udp') continue;
    if (p.state !== 'open') continue;
    ports.set(`${p.port}/${p.protocol}`, {
      port: p.port,
      protocol: p.protocol,
      service: cleanText(p.service),
      product: cleanText(p.product),
      version: cleanText(p.version),
    });
  }
  return [...ports.values()].sort((a, b) => a.protocol.localeCompare(b.protocol) || a.port - b.port);
}

/** "opened 22/tcp, 8080/tcp; closed 80/tcp"; '' when nothing changed. */
export function describePortChange(opened: readonly OpenPort[], closed: readonly OpenPort[]): string {
  const list = (ports: readonly OpenPort[]): string =>
    [...ports]
      .sort((a, b) => a.protocol.localeCompare(b.protocol) || a.port - b.port)
      .map((p) => `${p.port}/${p.protocol}`)
      .join(', ');
  const parts: string[] = [];
  if (opened.length > 0) parts.push(`opened ${list(opened)}`);
  if (closed.length > 0) parts.push(`closed ${list(closed)}`);
  return parts.join('; ');
}

export interface PortWatchOptions extends WatchSinks {
  /** The ports, and (with them, in one write) their events. */
  readonly store: WatchStore;
  readonly runTool: WatchRunTool;
  readonly logger: Pick<Logger, 'info' | 'warn'>;
  /** PORT_WATCH_MINUTES; 0: off. */
  readonly minutes: number;
  readonly now?: () => Date;
}

/** What one port watch did. */
export interface PortWatchSummary {
  readonly devices: number;
  readonly changed: number;
  readonly failed: number;
  readonly wallMs: number;
}

type Outcome = 'changed' | 'same' | 'failed';

export class PortWatch {
  private readonly periodic = new PeriodicRun(() => this.watch());
  private readonly now: () => Date;

  constructor(private readonly options: PortWatchOptions) {
    this.now = options.now ?? (() => new Date());
  }

  /** Schedules the watch: first run one interval after start (the scan has found devices by then). */
  start(): void {
    if (this.options.minutes <= 0) return;
    const intervalMs = this.options.minutes * 60_000;
    this.periodic.start(intervalMs, intervalMs);
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** Runs one watch now (or joins the one running). */
  runNow(): Promise<PortWatchSummary> {
    return this.periodic.runNow();
  }

  private async watch(): Promise<PortWatchSummary> {
    const started = performance.now();
    const targets = (await this.options.store.watchedDevices()).filter(
      (device) => ipVersion(device.ip) === 4,
    );
    const groups: { mac: string; ip: string }[][] = [];
    for (let i = 0; i < targets.length; i += devicesPerScan)
      groups.push(targets.slice(i, i + devicesPerScan));
    const outcomes = (await Promise.all(groups.map((group) => this.scanGroup(group)))).flat();
    const summary: PortWatchSummary = {
      devices: targets.length,
      changed: outcomes.filter((o) => o === 'changed').length,
      failed: outcomes.filter((o) => o === 'failed').length,
      wallMs: Math.round(performance.now() - started),
    };
    this.options.logger.info({ event: 'port-watch', ...summary }, 'port watch finished');
    return summary;
  }

  /**
   * One nmap command for a group of devices; their results are written together, in one write of
   * the device store's group commit.
   */
  private async scanGroup(group: readonly { mac: string; ip: string }[]): Promise<Outcome[]> {
    let report: NmapReport | Error;
    try {
      const result = await this.options.runTool('nmap', portScanArgs(group.map((d) => d.ip)), {
        timeoutMs: scanTimeoutMs,
        signal: this.periodic.signal,
        background: true,
      });
      // Parsed once for the whole group (a report of 8 hosts).
      report =
        result.exitCode === 0 ? readReport(result.stdout) : new Error(`nmap exited with ${result.exitCode}`);
    } catch (err) {
      report = err instanceof Error ? err : new Error(String(err));
    }
    const scanned: { mac: string; ip: string; ports: OpenPort[] }[] = [];
    const outcomes = group.map((device): Outcome => {
      try {
        if (report instanceof Error) throw report;
        scanned.push({ ...device, ports: openPorts(report, device.ip) });
        return 'same';
      } catch (err) {
        this.options.logger.warn(
          {
            event: 'port-watch-failed',
            mac: device.mac,
            error: err instanceof Error ? err.message : String(err),
          },
          'port scan of a device failed; its ports are unchanged',
        );
        return 'failed';
      }
    });
    if (scanned.length === 0) return outcomes;
    const now = wholeSeconds(this.now());
    const { store, notifications } = this.options;
    const ips = new Map(scanned.map(({ mac, ip }) => [mac, ip]));
    // The ports, their events and the notifications in one durable write.
    const events = await store.recordPortScans(scanned, now, (diffs) => {
      const planned: PlannedEvent[] = [];
      for (const [mac, diff] of diffs) {
        if (!diff.hadPreviousScan) continue;
        const info = describePortChange(diff.opened, diff.closed);
        if (info === '') continue;
        planned.push({
          mac,
          ip: ips.get(mac) ?? '',
          type: 'Ports Changed',
          dateTime: now,
          additionalInfo: info,
          pendingAlert: 1,
        });
      }
      return { events: planned, notify: notifications?.request(planned, now) };
    });
    publishWatchEvents(this.options, events);
    const changed = new Set(events.map((e) => e.mac));
    return group.map((device, i) => (changed.has(device.mac) ? 'changed' : (outcomes[i] ?? 'failed')));
  }
}

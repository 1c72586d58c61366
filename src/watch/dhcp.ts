/**
 * Rogue DHCP: every DHCP_WATCH_MINUTES, one DHCPDISCOVER on each scanned
 * interface (`nmap --script broadcast-dhcp-discover -e <iface>`, through the tool runner as
 * background work). Each offer names its server (Server Identifier) and the address offered; the
 * server's MAC is found with one ARP request (the scanner's discovery of that /32). An offer from a
 * server not in DHCP_SERVERS is a `Rogue DHCP` event on the server's MAC (the device is created
 * when new), "server <ip> offered <ip>"; it is not repeated while the same server (same MAC) keeps
 * offering (WatchMemory kind `rogue-dhcp`). The script's output comes from the LAN: anything that
 * is not a valid IPv4 address where one is expected is skipped, never stored.
 */
import type { Logger } from 'pino';
import { defaultDeviceJson } from '../devices/catalogue.js';
import type { PresenceStore } from '../store/presence.js';
import type { NewDeviceJson, PlannedEvent } from '../devices/presence.js';
import type { MemoryWrite, WatchStore } from '../store/watch.js';
import { discoverSubnet, type RunTool, type ScanToolName } from '../scanner/discovery.js';
import type { ScanSubnet } from '../scanner/subnets.js';
import { ipVersion } from '../validation.js';
import { PeriodicRun } from './periodic.js';
import { publishWatchEvents, wholeSeconds, type WatchRunTool, type WatchSinks } from './tool.js';

/** One offer as the script reported it (addresses validated). */
export interface DhcpOffer {
  readonly server: string;
  readonly offered: string;
}

/** The script waits this long for offers (its own default is 10 s). */
const listenSeconds = 5;

export function dhcpDiscoverArgs(iface: string): string[] {
  return [
    '--script',
    'broadcast-dhcp-discover',
    '--script-args',
    `broadcast-dhcp-discover.timeout=${listenSeconds}s`,
    '-e',
    iface,
    '-n',
    '-sn',
  ];
}

/**
 * The offers in `nmap --script broadcast-dhcp-discover` text output: one per "Response N of M"
 * block with a valid `Server Identifier` and `IP Offered`. Never throws; garbage yields nothing.
 */
export function parseDhcpDiscover(stdout: string): DhcpOffer[] {
  const offers: DhcpOffer[] = [];
  let server: string | undefined;
  let offered: string | undefined;
  const flush = (): void => {
    if (server !== undefined && offered !== undefined) offers.push({ server, offered });
    server = undefined;
    offered = undefined;
  };
  for (const raw of stdout.split('\n')) {
    const line = raw.replace(/^\|[_ ]?\s*/, '').trim();
    if (/^Response \d+ of \d+:?$/.test(line)) {
      flush();
      continue;
    }
    const field = /^(Server Identifier|IP Offered):\s*(\S+)$/.exec(line);
    if (!field) continue;
    const value = field[2] ?? '';
    if (ipVersion(value) !== 4) continue;
    if (field[1] === 'Server Identifier') server = value;
    else offered = value;
  }
  flush();
  const seen = new Set<string>();
  return offers.filter((o) => {
    const key = `${o.server} ${o.offered}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

export interface DhcpServerView {
  readonly ip: string;
  /** '' when the server did not answer ARP. */
  readonly mac: string;
  readonly offered: string;
  readonly trusted: boolean;
}

export interface DhcpWatchResult {
  /** When the last watch finished; null before the first. */
  readonly at: string | null;
  readonly servers: readonly DhcpServerView[];
}

export interface DhcpWatchOptions extends WatchSinks {
  readonly store: WatchStore;
  /** Where its events are written. */
  readonly presence: PresenceStore;
  readonly runTool: WatchRunTool;
  /** The scanner's discovery tool, to find a server's MAC. */
  readonly discoveryTool: ScanToolName;
  readonly subnets: readonly ScanSubnet[];
  /** DHCP_SERVERS; empty: off. */
  readonly trusted: readonly string[];
  readonly minutes: number;
  readonly logger: Pick<Logger, 'info' | 'warn'>;
  readonly now?: () => Date;
}

export class DhcpWatch {
  private last: DhcpWatchResult = { at: null, servers: [] };
  private readonly periodic = new PeriodicRun(() => this.watch());
  private readonly now: () => Date;
  private readonly interfaces: string[];

  constructor(private readonly options: DhcpWatchOptions) {
    this.now = options.now ?? (() => new Date());
    this.interfaces = [...new Set(options.subnets.map((s) => s.iface))];
  }

  get enabled(): boolean {
    return this.options.trusted.length > 0 && this.interfaces.length > 0;
  }

  /** The last watch's result. */
  result(): DhcpWatchResult {
    return this.last;
  }

  start(): void {
    if (!this.enabled) return;
    // A first look soon after start: a rogue server should not wait a whole interval.
    this.periodic.start(30_000, this.options.minutes * 60_000);
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  runNow(): Promise<DhcpWatchResult> {
    return this.periodic.runNow();
  }

  private async watch(): Promise<DhcpWatchResult> {
    const servers: DhcpServerView[] = [];
    for (const iface of this.interfaces) {
      let offers: DhcpOffer[] = [];
      try {
        const result = await this.options.runTool('nmap', dhcpDiscoverArgs(iface), {
          timeoutMs: (listenSeconds + 30) * 1000,
          signal: this.periodic.signal,
          background: true,
        });
        offers = parseDhcpDiscover(result.stdout);
      } catch (err) {
        this.options.logger.warn(
          { event: 'dhcp-watch-failed', iface, error: err instanceof Error ? err.message : String(err) },
          'DHCP watch of an interface failed',
        );
        continue;
      }
      for (const offer of offers)
        servers.push({
          ip: offer.server,
          mac: await this.macOf(offer.server, iface),
          offered: offer.offered,
          trusted: this.options.trusted.includes(offer.server),
        });
    }
    const now = wholeSeconds(this.now());
    await this.record(servers, now);
    this.last = { at: now.toISOString(), servers };
    this.options.logger.info(
      { event: 'dhcp-watch', servers: servers.length, rogue: servers.filter((s) => !s.trusted).length },
      'DHCP watch finished',
    );
    return this.last;
  }

  /** The server's MAC from one ARP request (arp-scan, or nmap -sn, of the /32); '' when none. */
  private async macOf(ip: string, iface: string): Promise<string> {
    const runTool: RunTool = (tool, args, options) =>
      this.options.runTool(tool, args, { ...options, background: true });
    try {
      const sightings = await discoverSubnet(
        { cidr: `${ip}/32`, iface, size: 1, label: `${ip}/32@${iface}` },
        { runTool, tool: this.options.discoveryTool, timeoutMs: 15_000, signal: this.periodic.signal },
      );
      return sightings.find((s) => s.ip === ip)?.mac ?? '';
    } catch {
      return '';
    }
  }

  /**
   * Events (and new devices) for rogue servers not already reported, with the watch's memory, in
   * one transaction. Read and write run without a turn of the event loop between them (the SQLite
   * store answers at once), so no other write slips in.
   */
  private async record(servers: readonly DhcpServerView[], now: Date): Promise<void> {
    const { store, presence } = this.options;
    const rogue = servers.filter((s) => !s.trusted && s.mac !== '');
    const events: PlannedEvent[] = [];
    const newDevices: NewDeviceJson[] = [];
    const remembered = await store.memory('rogue-dhcp');
    const current = new Map<string, string>();
    for (const server of rogue) {
      current.set(server.ip, server.mac);
      if (remembered.get(server.ip) === server.mac) continue;
      if (!(await store.deviceExists(server.mac)) && !newDevices.some((d) => d.devMac === server.mac))
        newDevices.push({
          ...defaultDeviceJson(),
          devMac: server.mac,
          devLastIP: server.ip,
          devFirstConnection: now.toISOString().replace('.000Z', 'Z'),
          devIsNew: 1,
          devSourcePlugin: 'dhcp-watch',
        });
      events.push({
        mac: server.mac,
        ip: server.ip,
        type: 'Rogue DHCP',
        dateTime: now,
        additionalInfo: `server ${server.ip} offered ${server.offered}`,
        pendingAlert: 1,
      });
    }
    const memory: MemoryWrite[] = [];
    for (const [ip, mac] of current) memory.push({ kind: 'rogue-dhcp', key: ip, value: mac });
    for (const ip of remembered.keys())
      if (!current.has(ip)) memory.push({ kind: 'rogue-dhcp', key: ip, value: undefined });
    if (events.length > 0 || memory.length > 0)
      await presence.applyPresence(
        { newDevices, updates: [], events, openSessions: [], closeSessions: [], scanState: [] },
        { memory, notify: this.options.notifications?.request(events, now) },
      );
    publishWatchEvents(this.options, events);
  }
}

/**
 * Asks the enabled sources for devices' names: the DHCP lease files (a lookup in what was read),
 * mDNS and NetBIOS (one UDP question to the device each) and reverse DNS (one PTR question to
 * DNS_SERVER, or the system resolver when it is unset). Devices are looked up NAME_CONCURRENCY at a
 * time, their sources side by side, each source within NAME_TIMEOUT_MS. Nothing a source answers
 * is trusted: names go through cleanName, and a garbled, late or flooding answer gives no name.
 *
 * What goes wrong is summed up per source for the cycle summary (nameSourceErrors). A device that
 * does not answer mDNS or NetBIOS is not an error (most devices run neither); a DNS server that
 * does not answer is. After NAME_CONCURRENCY DNS questions in a row went unanswered, the server is
 * taken as down for the rest of the lookup round: otherwise one dead resolver would hold every
 * device for the full timeout.
 */
import { Resolver } from 'node:dns/promises';
import { setMaxListeners } from 'node:events';
import { isIPv4 } from 'node:net';
import type { Config } from '../config.js';
import { cleanName, hostPart } from './clean.js';
import { queryPtr } from './dns-query.js';
import { LeaseFiles, type Lease } from './leases/reader.js';
import { queryNetbios } from './netbios.js';
import type { AutoSource, NameCandidate, NameSourceError } from './types.js';
import type { UdpOutcome } from './udp.js';

export type NamesConfig = Pick<
  Config,
  | 'DHCP_LEASES'
  | 'NAME_MDNS'
  | 'NAME_NETBIOS'
  | 'NAME_DNS'
  | 'NAME_CONCURRENCY'
  | 'NAME_TIMEOUT_MS'
  | 'NAME_REFRESH_MINUTES'
  | 'DNS_SERVER'
>;

export interface ResolverOptions {
  readonly config: NamesConfig;
  /** Test and bench seam: the ports asked instead of 5353 and 137 (stand-ins on loopback). */
  readonly testOnlyPorts?: { readonly mdns?: number; readonly netbios?: number };
}

/** A device to look up: its MAC (for the leases) and the address its responders answer on. */
export interface NameTarget {
  readonly mac: string;
  readonly ip: string;
}

export interface DeviceNames {
  /** Every source's name for the device, in rank order. */
  readonly candidates: readonly NameCandidate[];
  /** The full reverse DNS answer (for devFQDN); null when DNS gave none. */
  readonly fqdn: string | null;
  /** The device's DHCP lease (its client identifier is kept for linking random MACs). */
  readonly lease: Lease | undefined;
}

export interface LookupRound {
  readonly results: ReadonlyMap<string, DeviceNames>;
  readonly errors: readonly NameSourceError[];
}

/** Counts of one round's troubles per source and kind, turned into summary lines at the end. */
class Troubles {
  private readonly counts = new Map<string, { source: AutoSource; text: string; n: number }>();
  add(source: AutoSource, text: string): void {
    const key = `${source}\u0000${text}`;
    const held = this.counts.get(key);
    if (held) held.n++;
    else this.counts.set(key, { source, text, n: 1 });
  }
  list(): NameSourceError[] {
    return [...this.counts.values()].map(({ source, text, n }) => ({
      source,
      message: n === 1 ? text : `${text} (${n} times)`,
    }));
  }
}

export class NameResolver {
  readonly leases: LeaseFiles;
  private readonly systemResolver: Resolver | undefined;

  constructor(private readonly options: ResolverOptions) {
    this.leases = new LeaseFiles(options.config.DHCP_LEASES);
    const { config } = options;
    this.systemResolver =
      config.NAME_DNS && config.DNS_SERVER === undefined
        ? new Resolver({ timeout: config.NAME_TIMEOUT_MS, tries: 1 })
        : undefined;
  }

  /** Whether any source is enabled. */
  get enabled(): boolean {
    const c = this.options.config;
    return this.leases.configured || c.NAME_MDNS || c.NAME_NETBIOS || c.NAME_DNS;
  }

  /** Looks the targets up (see the file comment). Never throws. */
  async lookup(targets: readonly NameTarget[], parent?: AbortSignal): Promise<LookupRound> {
    // The round's own signal: every question in flight listens to it (up to three per device).
    const controller = new AbortController();
    const signal = controller.signal;
    setMaxListeners(3 * this.options.config.NAME_CONCURRENCY + 1, signal);
    const abort = (): void => {
      controller.abort();
    };
    if (parent?.aborted) abort();
    parent?.addEventListener('abort', abort, { once: true });
    try {
      return await this.round(targets, signal);
    } finally {
      parent?.removeEventListener('abort', abort);
    }
  }

  private async round(targets: readonly NameTarget[], signal: AbortSignal): Promise<LookupRound> {
    const troubles = new Troubles();
    const snapshot = this.leases.configured ? await this.leases.read() : undefined;
    const results = new Map<string, DeviceNames>();
    const dns = { silentInARow: 0, down: false };
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < targets.length && !signal.aborted) {
        const target = targets[next++];
        if (target === undefined) break;
        results.set(target.mac, await this.lookupOne(target, snapshot?.byMac, dns, troubles, signal));
      }
    };
    const workers = Math.min(this.options.config.NAME_CONCURRENCY, targets.length);
    await Promise.all(Array.from({ length: workers }, worker));
    if (dns.down)
      troubles.add(
        'dns',
        `the DNS server did not answer ${this.options.config.NAME_CONCURRENCY} questions in a row; reverse DNS skipped for the rest of the round`,
      );
    return { results, errors: [...(snapshot?.errors ?? []), ...troubles.list()] };
  }

  private async lookupOne(
    target: NameTarget,
    leases: ReadonlyMap<string, Lease> | undefined,
    dns: { silentInARow: number; down: boolean },
    troubles: Troubles,
    signal?: AbortSignal,
  ): Promise<DeviceNames> {
    const { config } = this.options;
    const timeoutMs = config.NAME_TIMEOUT_MS;
    const lease = leases?.get(target.mac);
    const hasIp = target.ip !== '';
    const [mdns, netbios, ptr] = await Promise.all([
      config.NAME_MDNS && hasIp
        ? queryPtr({
            server: target.ip,
            port: this.options.testOnlyPorts?.mdns ?? 5353,
            ip: target.ip,
            timeoutMs,
            recursionDesired: false,
            signal,
          })
        : undefined,
      config.NAME_NETBIOS && hasIp && isIPv4(target.ip)
        ? queryNetbios({ ip: target.ip, port: this.options.testOnlyPorts?.netbios ?? 137, timeoutMs, signal })
        : undefined,
      config.NAME_DNS && hasIp && !dns.down ? this.reverseDns(target.ip, signal) : undefined,
    ]);
    if (ptr !== undefined) {
      if (ptr.kind === 'timeout') {
        if (++dns.silentInARow >= config.NAME_CONCURRENCY) dns.down = true;
      } else dns.silentInARow = 0;
    }
    const candidates: NameCandidate[] = [];
    if (lease !== undefined && lease.hostname !== '')
      candidates.push({ source: 'dhcp', name: lease.hostname });
    const mdnsName = this.answer('mdns', mdns, troubles);
    if (mdnsName !== undefined)
      candidates.push({ source: 'mdns', name: cleanName(hostPart(mdnsName, true)) });
    const netbiosName = this.answer('netbios', netbios, troubles);
    if (netbiosName !== undefined) candidates.push({ source: 'netbios', name: cleanName(netbiosName) });
    const fqdnText = this.answer('dns', ptr, troubles);
    const fqdn = fqdnText === undefined ? '' : cleanName(hostPart(fqdnText, false));
    if (fqdn !== '') candidates.push({ source: 'dns', name: cleanName(fqdn.split('.')[0] ?? '') });
    return { candidates: candidates.filter((c) => c.name !== ''), fqdn: fqdn === '' ? null : fqdn, lease };
  }

  /** A source's name from its outcome; troubles noted on the way. */
  private answer(
    source: AutoSource,
    outcome: UdpOutcome<string> | undefined,
    troubles: Troubles,
  ): string | undefined {
    if (outcome === undefined) return undefined;
    switch (outcome.kind) {
      case 'answer':
        return outcome.value === '' ? undefined : outcome.value;
      case 'garbage':
        troubles.add(source, `answers that are not ${source} answers were ignored`);
        return undefined;
      case 'timeout':
        // A device without a responder is the common case for mDNS and NetBIOS; for DNS the
        // server itself did not answer.
        if (source === 'dns') troubles.add(source, 'the DNS server did not answer in time');
        return undefined;
      case 'error':
        if (source === 'dns') troubles.add(source, `the DNS server failed: ${outcome.message}`);
        return undefined;
    }
  }

  private async reverseDns(ip: string, signal?: AbortSignal): Promise<UdpOutcome<string>> {
    const server = this.options.config.DNS_SERVER;
    if (server !== undefined)
      return queryPtr({
        server: server.host,
        port: server.port ?? 53,
        ip,
        timeoutMs: this.options.config.NAME_TIMEOUT_MS,
        recursionDesired: true,
        signal,
      });
    try {
      const names = (await this.systemResolver?.reverse(ip)) ?? [];
      return { kind: 'answer', value: names[0] ?? '' };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTFOUND' || code === 'ENODATA') return { kind: 'answer', value: '' };
      if (code === 'ETIMEOUT') return { kind: 'timeout' };
      return { kind: 'error', message: code ?? String(err) };
    }
  }
}

/**
 * nmap port scan of one address or a CIDR range. Arguments, in this order:
 *   --privileged          when not root but nmap gets CAP_NET_RAW/CAP_NET_ADMIN (privileges.ts)
 *   <mode flags>          fast: -F, normal: none, detail: -A, skipdiscovery: -Pn (exact, case-sensitive)
 *   -6                    for an IPv6 target
 *   --dns-servers <ip>    when DNS_SERVER is set, so reverse lookups of the hosts found go to the
 *                         configured resolver instead of the system one. nmap always asks port 53:
 *   -n                    instead, when DNS_SERVER names another port: no reverse lookups at all,
 *                         rather than asking a resolver that is not the configured one
 *   -oX /dev/fd/3         XML to file descriptor 3, which the runner gives nmap and reads back
 *                         (RunOptions.report: a file with no name, so a killed server leaves
 *                         nothing), parsed into `hosts`. Not `-oX -`: with XML on stdout nmap
 *                         drops its normal output, which is the answer's `output` and its live
 *                         progress.
 *   --stats-every 1s      only when the caller follows the output live: nmap then prints how far a
 *                         long scan has got; those lines are progress, never part of `output`
 *   <target>              the validated address or range, last
 */
import { DomainError } from '../errors.js';
import { mappedIpv4Hint, parseScanTarget } from '../validation.js';
import { parseNmapXml, type NmapHost, type NmapReport } from './nmap-xml.js';
import type { DnsServer } from './nslookup.js';
import type { RawSocketAccess } from './privileges.js';
import type { ToolRunner } from './runner.js';

export const nmapModes = {
  fast: ['-F'],
  normal: [],
  detail: ['-A'],
  skipdiscovery: ['-Pn'],
} as const satisfies Record<string, readonly string[]>;

export type NmapMode = keyof typeof nmapModes;

export interface NmapOptions {
  readonly maxHosts: number;
  readonly timeoutMs: number;
  /** DNS_SERVER; undefined for the system resolver. */
  readonly dnsServer: DnsServer | undefined;
  /** How nmap gets raw sockets (privileges.ts): -A needs them; without root it needs --privileged. */
  readonly rawSockets: RawSocketAccess;
  /** Each output line as it arrives (live progress); adds nmap's periodic progress lines. */
  readonly onLine?: (line: string) => void;
}

/** Where nmap writes its XML: the file the runner gives the command as file descriptor 3. */
export const reportPath = '/dev/fd/3';

/** Interval of nmap's own progress report when the output is followed live. */
const statsInterval = '1s';

/**
 * nmap's --stats-every lines ("Stats: 0:00:04 elapsed; ..." and "<phase> Timing: About 12.50%
 * done; ETC: ..."): progress only, kept out of `output` so it equals the plain answer's.
 */
export function isNmapStatsLine(line: string): boolean {
  return (
    /^Stats: \d+:\d\d:\d\d elapsed; /.test(line) || /^[A-Za-z][\w -]* Timing: About [\d.]+% done/.test(line)
  );
}

export interface NmapResult {
  success: true;
  mode: NmapMode;
  ip: string;
  output: string[];
  hosts: NmapHost[];
}

function isMode(mode: string): mode is NmapMode {
  return Object.hasOwn(nmapModes, mode);
}

/** Validates the request (`invalid`, naming the field) and builds the arguments before `-oX`. */
export function nmapArgs(
  scan: string,
  mode: string,
  options: NmapOptions,
): { mode: NmapMode; args: string[]; target: string } {
  if (!isMode(mode)) {
    throw new DomainError(
      'invalid',
      `Invalid field 'mode': expected one of ${Object.keys(nmapModes).join(', ')} (exact, lowercase).`,
      { code: 'INVALID_MODE' },
    );
  }
  const target = parseScanTarget(scan);
  if (target === null) {
    throw new DomainError(
      'invalid',
      `Invalid field 'scan': expected an IPv4 or IPv6 address, or a CIDR range such as 192.168.1.0/24.${mappedIpv4Hint(scan)}`,
      { code: 'INVALID_SCAN_TARGET' },
    );
  }
  if (target.size > options.maxHosts) {
    throw new DomainError(
      'invalid',
      `Invalid field 'scan': the range covers ${target.size} addresses; at most ${options.maxHosts} (NMAP_MAX_HOSTS) are allowed.`,
      { code: 'SCAN_RANGE_TOO_LARGE' },
    );
  }
  if (mode === 'detail' && options.rawSockets === 'none') {
    // -A includes OS detection (-O), which needs raw sockets: without them nmap quits at once with
    // "requires root privileges". Say so clearly instead of passing on that failure.
    throw new DomainError(
      'unavailable',
      "nmap mode 'detail' (-A) needs raw sockets for OS detection: run netkeep as root, or give it CAP_NET_RAW and CAP_NET_ADMIN (AmbientCapabilities in the systemd unit, or setcap on nmap; see docs/install.md), or use another mode.",
      { code: 'NEEDS_ROOT', reason: 'Insufficient privileges' },
    );
  }
  return {
    mode,
    args: [
      // Not root but with the capabilities: nmap would assume it has no raw sockets.
      ...(options.rawSockets === 'capabilities' ? ['--privileged'] : []),
      ...nmapModes[mode],
      ...(target.version === 6 ? ['-6'] : []),
      ...dnsArgs(options.dnsServer),
    ],
    target: target.target,
  };
}

function dnsArgs(dns: DnsServer | undefined): string[] {
  if (dns === undefined) return [];
  return dns.port === undefined || dns.port === 53 ? ['--dns-servers', dns.host] : ['-n'];
}

export async function nmap(
  runner: ToolRunner,
  scan: string,
  mode: string,
  options: NmapOptions,
  signal?: AbortSignal,
): Promise<NmapResult> {
  const built = nmapArgs(scan, mode, options);
  const result = await runner.run({
    tool: 'nmap',
    args: [
      ...built.args,
      ...(options.onLine === undefined ? [] : ['--stats-every', statsInterval]),
      '-oX',
      reportPath,
      built.target,
    ],
    timeoutMs: options.timeoutMs,
    signal,
    onLine: options.onLine,
    report: true,
  });
  let report: NmapReport;
  try {
    report = parseNmapXml(result.report);
  } catch (err) {
    throw new DomainError('command-failed', 'nmap finished but its XML report could not be read.', {
      code: 'NMAP_REPORT_UNREADABLE',
      reason: 'Command failed',
      details: err instanceof Error ? err.message : String(err),
    });
  }
  // A report that says exit="error" is a failed command, whatever the exit code was.
  if (report.error !== null) {
    throw new DomainError('command-failed', 'nmap reported an error.', {
      code: 'NMAP_REPORTED_ERROR',
      reason: 'Command failed',
      details: report.error,
    });
  }
  return {
    success: true,
    mode: built.mode,
    ip: scan,
    output: result.stdout
      .split('\n')
      .filter((line) => line.trim() !== '' && (options.onLine === undefined || !isNmapStatsLine(line))),
    hosts: report.hosts,
  };
}

/**
 * Whether a tool started by this process can open raw sockets (nmap's OS detection, SYN scans and
 * ARP pings; arp-scan), which is what root gives, without being root: Linux capabilities
 * CAP_NET_RAW and CAP_NET_ADMIN, either in this process's ambient set (systemd
 * `AmbientCapabilities=`, `setpriv --ambient-caps`: every child inherits them) or as file
 * capabilities on the tool's binary (`setcap cap_net_raw,cap_net_admin+eip`, as the Docker image
 * does). A tool that runs with them but not as root must be told so: nmap checks the uid alone and
 * needs `--privileged`.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** root: uid 0; capabilities: not root, but the tool gets both capabilities; none: neither. */
export type RawSocketAccess = 'root' | 'capabilities' | 'none';

const capNetAdmin = 12n;
const capNetRaw = 13n;
const needed = (1n << capNetAdmin) | (1n << capNetRaw);

/** A capability set line of /proc/self/status (hex), or 0 when it cannot be read. */
export function processCapabilities(set: 'CapAmb' | 'CapEff' | 'CapPrm', status?: string): bigint {
  let text = status;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/status', 'utf8');
    } catch {
      return 0n;
    }
  }
  const match = new RegExp(`^${set}:\\s*([0-9a-f]+)$`, 'm').exec(text);
  return match?.[1] === undefined ? 0n : BigInt(`0x${match[1]}`);
}

/** True when `getcap` output gives the binary both capabilities, effective and permitted. */
export function fileCapsGrant(getcapOutput: string): boolean {
  // `/usr/bin/nmap cap_net_admin,cap_net_raw=eip` (libcap >= 2.30) or `/usr/bin/nmap = cap_net_raw+ep`.
  const granted = new Set<string>();
  const clauses = getcapOutput.trim().split(/\s+/).slice(1).join(' ');
  for (const [, names = '', flags = ''] of clauses.matchAll(/([a-z_,]+)\s*[=+]([a-z]*)/g)) {
    if (flags.includes('e') && flags.includes('p')) for (const name of names.split(',')) granted.add(name);
  }
  return granted.has('cap_net_raw') && granted.has('cap_net_admin');
}

/** File capabilities of a binary via getcap (libcap2-bin); '' when getcap is missing or fails. */
function getcap(binary: string, toolPath: string): string {
  for (const dir of toolPath.split(':').concat(['/usr/sbin', '/sbin'])) {
    if (!dir.startsWith('/')) continue;
    const result = spawnSync(`${dir}/getcap`, [binary], { encoding: 'utf8', timeout: 5000 });
    if (result.error === undefined && result.status === 0) return result.stdout;
  }
  return '';
}

/** How a tool at `binary` gets raw sockets when this process starts it. Computed once, at start. */
export function rawSocketAccess(
  binary: string | undefined,
  toolPath: string,
  uid = process.getuid?.(),
): RawSocketAccess {
  if (uid === 0) return 'root';
  if ((processCapabilities('CapAmb') & needed) === needed) return 'capabilities';
  if (binary !== undefined && fileCapsGrant(getcap(binary, toolPath))) return 'capabilities';
  return 'none';
}

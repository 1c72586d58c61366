/**
 * Is a scan interface usable right now? Checked before each subnet's discovery because the tools
 * cannot be trusted to fail on a dead link: with the cable pulled (no carrier) arp-scan and
 * `nmap -sn` both exit 0 reporting no hosts, and nmap on an interface that is administratively
 * down skips every target and exits 0 too. Applied as a result, that would mark every device of
 * the subnet as gone; treated as a failed cycle, it changes nothing.
 * Reads the kernel's view from sysfs; spawns nothing.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Operational states (RFC 2863, as Linux reports them in `operstate`) in which no frame can
 * reach the LAN. `unknown` is what many working interfaces report (drivers without carrier
 * detection), `dormant` and `testing` are rare and left to the tool.
 */
const deadStates = new Set(['down', 'lowerlayerdown', 'notpresent']);

/** Why `iface` cannot be scanned now (missing, down, no carrier), or undefined when it can. */
export function interfaceProblem(iface: string, sysfsNet = '/sys/class/net'): string | undefined {
  // The name becomes a path step: '.' and '..' (refused in SCAN_SUBNETS too) are no interface.
  if (iface === '.' || iface === '..') return `interface ${iface} does not exist`;
  // Not Linux sysfs: leave the verdict to the tool.
  if (!existsSync(sysfsNet)) return undefined;
  let state: string;
  try {
    state = readFileSync(join(sysfsNet, iface, 'operstate'), 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return `interface ${iface} does not exist`;
    return undefined; // unreadable: leave the verdict to the tool
  }
  if (deadStates.has(state))
    return `interface ${iface} is down (operstate ${state}: administratively down or no carrier)`;
  return undefined;
}

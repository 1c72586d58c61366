/**
 * A real DHCP server and client on a test LAN (testlan.ts): dnsmasq serving DHCP on the router's
 * bridge (DNS off) and writing a lease file the server under test reads, and busybox udhcpc taking
 * a lease from a host's namespace, with a host name and, when given, a client identifier.
 */
import { commandMissing } from './requirements.js';
import type { LanHost, TestLan } from './testlan.js';

export const dnsmasq = '/usr/sbin/dnsmasq';
export const udhcpc = '/usr/sbin/udhcpc';

/** Why the DHCP pair cannot run here (undefined when both are installed). */
export function dhcpMissing(): string | undefined {
  return commandMissing(dnsmasq, 'dnsmasq-base') ?? commandMissing(udhcpc, 'udhcpc');
}

/** Starts dnsmasq on the LAN's bridge (addresses .200-.250), writing its leases to `leaseFile`. */
export function startDhcpServer(lan: TestLan, leaseFile: string): void {
  const base = lan.gateway.replace(/\.1$/, '');
  lan.spawn(lan.routerNs, [
    dnsmasq,
    '--no-daemon',
    '--port=0',
    '--conf-file=/dev/null',
    '--pid-file=',
    '--interface=br0',
    '--bind-interfaces',
    '--no-ping',
    `--dhcp-range=${base}.200,${base}.250,12h`,
    `--dhcp-leasefile=${leaseFile}`,
  ]);
}

export interface LeaseRequest {
  /** Sent as the DHCP host name (option 12). */
  readonly hostname: string;
  /** Option 61 as hex bytes (e.g. `ff0011223344`); default: udhcpc's own (01 + the MAC). */
  readonly clientId?: string;
}

/** Takes a lease from `host`'s namespace; `-s /bin/true` leaves the host's address alone. */
export async function takeLease(lan: TestLan, host: LanHost, request: LeaseRequest): Promise<void> {
  await lan.exec(host.ns, [
    udhcpc,
    '-i',
    'eth0',
    '-n',
    '-q',
    '-t',
    '5',
    '-T',
    '1',
    '-x',
    `hostname:${request.hostname}`,
    ...(request.clientId === undefined ? [] : ['-x', `0x3d:${request.clientId}`]),
    '-s',
    '/bin/true',
  ]);
}

/**
 * dnsmasq's lease file (also Pi-hole's and OpenWrt's `dhcp.leases`): one IPv4 lease per line,
 * `<expiry> <mac> <ip> <hostname|*> <client-id|*>`, expiry in Unix seconds (0: infinite). A `duid`
 * line starts the DHCPv6 leases, whose second field is an IAID, not a MAC: they name no MAC and
 * are skipped. dnsmasq rewrites the file in place, so a read may see a last line cut short: it
 * fails the line pattern and is counted as not understood.
 */
import { makeLease, type Lease, type ParsedLeases } from './lease.js';

const line4 = /^(\d{1,12}) (\S+) (\d{1,3}(?:\.\d{1,3}){3}) (\S+) (\S+)$/;

export function parseDnsmasqLeases(text: string): ParsedLeases {
  const leases: Lease[] = [];
  let rejected = 0;
  let v6 = false;
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (line === '') continue;
    if (line.startsWith('duid ')) {
      v6 = true;
      continue;
    }
    if (v6) continue;
    const match = line4.exec(line);
    if (match === null) {
      rejected++;
      continue;
    }
    const [, expiry = '0', mac = '', ip = '', hostname = '*', clientId = '*'] = match;
    const seconds = Number(expiry);
    const lease = makeLease(
      mac,
      ip,
      hostname === '*' ? '' : hostname,
      clientId === '*' ? '' : clientId,
      seconds === 0 ? null : new Date(seconds * 1000),
    );
    if (lease === null) rejected++;
    else leases.push(lease);
  }
  return { leases, rejected };
}

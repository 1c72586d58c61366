/**
 * Kea's memfile lease file `kea-leases4.csv` (also pfSense's and OPNsense's Kea backend): a header
 * row naming the columns (`address,hwaddr,client_id,valid_lifetime,expire,subnet_id,fqdn_fwd,
 * fqdn_rev,hostname,state,user_context`, later versions add more), then one row per lease change,
 * appended; the last row of an address wins. Kea writes a comma inside a value as `&#x2c`. Rows in
 * state 1 (declined) name nobody.
 */
import { makeLease, type Lease, type ParsedLeases } from './lease.js';

function unescape(value: string): string {
  return value.replace(/&#x2c/gi, ',');
}

export function parseKeaLeases(text: string): ParsedLeases {
  const lines = text.split('\n');
  const header = (lines[0] ?? '').trim().split(',');
  const column = (name: string): number => header.indexOf(name);
  const at = {
    address: column('address'),
    hwaddr: column('hwaddr'),
    clientId: column('client_id'),
    expire: column('expire'),
    hostname: column('hostname'),
    state: column('state'),
  };
  if (at.address === -1 || at.hwaddr === -1 || at.hostname === -1)
    throw new Error('not a Kea lease file: the header row does not name address, hwaddr and hostname');
  const byIp = new Map<string, Lease | null>();
  let rejected = 0;
  for (const raw of lines.slice(1)) {
    const line = raw.trimEnd();
    if (line === '') continue;
    const fields = line.split(',');
    // A row cut short (a write in progress) has fewer fields than the header.
    if (fields.length < header.length) {
      rejected++;
      continue;
    }
    const field = (index: number): string => (index === -1 ? '' : unescape(fields[index] ?? ''));
    const address = field(at.address);
    if (field(at.state) === '1' || field(at.hwaddr) === '') {
      byIp.set(address, null);
      continue;
    }
    const expire = Number(field(at.expire));
    const lease = makeLease(
      field(at.hwaddr),
      address,
      field(at.hostname).replace(/\.$/, ''),
      field(at.clientId),
      Number.isFinite(expire) && expire > 0 ? new Date(expire * 1000) : null,
    );
    if (lease === null) rejected++;
    byIp.set(address, lease);
  }
  return { leases: [...byIp.values()].filter((l): l is Lease => l !== null), rejected };
}

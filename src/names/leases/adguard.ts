/**
 * AdGuard Home's `leases.json` (its built-in DHCP server's data file):
 * `{"version":1,"leases":[{"expires":"<RFC 3339 or empty>","ip":"..","hostname":"..","mac":"..",
 * "static":false}]}`. Static leases have an empty `expires`. A file that is not that JSON (cut
 * short by a write in progress) throws: nothing of it can be trusted.
 */
import { makeLease, type Lease, type ParsedLeases } from './lease.js';

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

export function parseAdguardLeases(content: string): ParsedLeases {
  const data: unknown = JSON.parse(content);
  const list = typeof data === 'object' && data !== null ? (data as { leases?: unknown }).leases : undefined;
  if (!Array.isArray(list)) throw new Error('not an AdGuard Home lease file: no "leases" array');
  const leases: Lease[] = [];
  let rejected = 0;
  for (const entry of list as unknown[]) {
    const record = typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>) : {};
    const expiresText = text(record.expires);
    const expires = expiresText === '' ? null : new Date(expiresText);
    const lease = makeLease(
      text(record.mac),
      text(record.ip),
      text(record.hostname),
      '',
      expires !== null && Number.isNaN(expires.getTime()) ? null : expires,
    );
    if (lease === null) rejected++;
    else leases.push(lease);
  }
  return { leases, rejected };
}

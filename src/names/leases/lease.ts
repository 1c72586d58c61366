/** One DHCP lease as the lease readers give it, whatever the server's file format. */
import { normalizeMac } from '../../validation.js';
import { cleanName } from '../clean.js';

export interface Lease {
  /** Canonical MAC (aa:bb:cc:dd:ee:ff). */
  readonly mac: string;
  readonly ip: string;
  /** The client's host name, clean (clean.ts); '' when it sent none. */
  readonly hostname: string;
  /**
   * The DHCP client identifier (option 61) as lowercase hex bytes separated by ':' (e.g.
   * 01:aa:bb:cc:dd:ee:ff); '' when the server recorded none. Kept for linking random MACs.
   */
  readonly clientId: string;
  /** When the lease ends; null for an infinite or static lease. Expired leases still name. */
  readonly expires: Date | null;
}

/** What one parse of a lease file gives: its leases, and how many entries were not understood. */
export interface ParsedLeases {
  readonly leases: Lease[];
  readonly rejected: number;
}

export type LeaseFormat = 'dnsmasq' | 'isc' | 'kea' | 'adguard';
export const leaseFormats: readonly LeaseFormat[] = ['dnsmasq', 'isc', 'kea', 'adguard'];

/** A lease from raw fields, or null when the MAC is not a MAC (the entry is not understood). */
export function makeLease(
  rawMac: string,
  ip: string,
  rawHostname: string,
  clientId: string,
  expires: Date | null,
): Lease | null {
  const mac = normalizeMac(rawMac.trim());
  if (mac === null) return null;
  return { mac, ip: ip.trim(), hostname: cleanName(rawHostname), clientId: clientIdHex(clientId), expires };
}

/** A client id in the form `hh:hh:...` (lowercase), or '' when it is not one. */
function clientIdHex(raw: string): string {
  const value = raw.trim().toLowerCase();
  return /^[0-9a-f]{1,2}(?::[0-9a-f]{1,2})*$/.test(value) && value.length <= 767
    ? value
        .split(':')
        .map((b) => b.padStart(2, '0'))
        .join(':')
    : '';
}

/** Bytes as a client id in the lease form (lowercase hex, ':'-separated). */
export function bytesToClientId(bytes: Uint8Array): string {
  return [...bytes].map((b) => b.toString(16).padStart(2, '0')).join(':');
}

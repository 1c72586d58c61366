/**
 * The host's network interfaces and addresses (GET /nettools/interfaces), in NetAlertX's shape:
 * `{name: {name, short, type, state, mtu, mac, ipv4: ["a.b.c.d/len"], ipv6: [...], rx_bytes,
 * tx_bytes}}` (server/api_server/nettools_endpoint.py, network_interfaces). NetAlertX parses
 * `nmap --iflist`; netkeep asks Node (os.networkInterfaces) and reads the kernel's per-interface
 * counters under /sys/class/net, read-only. Interface names come from the kernel, never a client.
 */
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { Type, type Static } from '@sinclair/typebox';

export const InterfaceSchema = Type.Object({
  name: Type.String(),
  short: Type.String({ description: "The same name (NetAlertX: nmap's short name)." }),
  type: Type.String({ description: "loopback or ethernet (from the kernel's link type); other otherwise." }),
  state: Type.String({ description: "The kernel's operstate: up, down, unknown, ..." }),
  mtu: Type.Union([Type.Integer(), Type.Null()]),
  mac: Type.Union([Type.String(), Type.Null()], { description: 'null for interfaces without one.' }),
  ipv4: Type.Array(Type.String(), { description: 'address/prefix length.' }),
  ipv6: Type.Array(Type.String(), { description: 'address/prefix length.' }),
  rx_bytes: Type.Integer(),
  tx_bytes: Type.Integer(),
});
export type InterfaceInfo = Static<typeof InterfaceSchema>;

/** A small file of /sys/class/net/<name>/, trimmed, or undefined where it cannot be read. */
function sysValue(name: string, file: string): string | undefined {
  try {
    return readFileSync(join('/sys/class/net', name, file), 'utf8').trim();
  } catch {
    return undefined;
  }
}

function sysInteger(name: string, file: string): number | null {
  const text = sysValue(name, file);
  const value = text === undefined ? NaN : Number(text);
  return Number.isSafeInteger(value) ? value : null;
}

/** ARPHRD_ETHER and ARPHRD_LOOPBACK of linux/if_arp.h. */
const linkTypes: Readonly<Record<string, string>> = { '1': 'ethernet', '772': 'loopback' };

export function hostInterfaces(): Record<string, InterfaceInfo> {
  const result: Record<string, InterfaceInfo> = {};
  for (const [name, addresses] of Object.entries(networkInterfaces())) {
    const list = addresses ?? [];
    const mac = list.find((a) => a.mac !== '00:00:00:00:00:00')?.mac ?? null;
    result[name] = {
      name,
      short: name,
      type: linkTypes[sysValue(name, 'type') ?? ''] ?? (list.some((a) => a.internal) ? 'loopback' : 'other'),
      state: sysValue(name, 'operstate') ?? 'unknown',
      mtu: sysInteger(name, 'mtu'),
      mac,
      ipv4: list.filter((a) => a.family === 'IPv4').map((a) => a.cidr ?? a.address),
      ipv6: list.filter((a) => a.family === 'IPv6').map((a) => a.cidr ?? a.address),
      rx_bytes: sysInteger(name, 'statistics/rx_bytes') ?? 0,
      tx_bytes: sysInteger(name, 'statistics/tx_bytes') ?? 0,
    };
  }
  return result;
}

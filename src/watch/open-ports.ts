/**
 * NetAlertX's open ports question, `{target}`: an IP address or a MAC (as NetAlertX's
 * OpenPortsRequest accepts) resolved to a device, and that device's ports as the port watch stored
 * them, the same read as GET /device/<mac>/ports. As NetAlertX, a target with no stored open port
 * is "nothing found"; the reason says which case it is.
 */
import type { StoredPort, WatchStore } from '../store/watch.js';
import { DomainError } from '../errors.js';
import { mappedIpv4Hint, parseIpOrMac } from '../validation.js';

export interface TargetPorts {
  readonly mac: string;
  /** ISO 8601; null when never scanned (then there are no ports either). */
  readonly scannedAt: string | null;
  /** At least one. */
  readonly ports: readonly StoredPort[];
}

/**
 * The stored open ports of the device `target` names. Throws `invalid` (INVALID_TARGET) for text
 * that is neither an IP nor a MAC, `not-found` for no such device (DEVICE_NOT_FOUND) or a device
 * without stored open ports (NO_OPEN_PORTS).
 */
export async function openPortsOf(store: WatchStore, target: string): Promise<TargetPorts> {
  const parsed = parseIpOrMac(target);
  if (parsed === null)
    throw new DomainError(
      'invalid',
      `target '${target.slice(0, 64)}' is neither an IP address nor a MAC address.${mappedIpv4Hint(target)}`,
      { code: 'INVALID_TARGET' },
    );
  const mac = 'mac' in parsed ? parsed.mac : await store.deviceAt(parsed.ip);
  if (mac === undefined || !(await store.deviceExists(mac)))
    throw new DomainError(
      'not-found',
      'mac' in parsed ? `Device ${parsed.mac} not found.` : `No device has the address ${parsed.ip}.`,
      { code: 'DEVICE_NOT_FOUND' },
    );
  const { scannedAt, ports } = await store.ports(mac);
  if (ports.length === 0)
    throw new DomainError(
      'not-found',
      scannedAt === null
        ? `No stored open ports for ${mac}: the port watch has not scanned it (set devWatchPorts to 1).`
        : `No stored open ports for ${mac}: the port watch found none open at ${scannedAt}.`,
      { code: 'NO_OPEN_PORTS' },
    );
  return { mac, scannedAt, ports };
}

/**
 * Wake-on-LAN, natively: the 102-byte magic packet (6 x 0xFF, then the MAC 16 times) over UDP with
 * broadcast enabled, sent 3 times because UDP may drop one and waking a machine twice is harmless.
 * No external command, so it does not go through the tool runner.
 */
import { createSocket } from 'node:dgram';
import { DomainError } from '../errors.js';
import { ipVersion, macBytes, normalizeMac } from '../validation.js';

export interface WakeOnLanRequest {
  readonly devMac: string;
  /** IPv4 broadcast (or unicast) address; default WOL_BROADCAST. */
  readonly broadcast?: string;
  /** UDP port 1-65535; default WOL_PORT. */
  readonly port?: number;
}

export interface WakeOnLanDefaults {
  /** WOL_BROADCAST, checked to be IPv4 at start. */
  readonly broadcast: string;
  readonly port: number;
}

export interface WakeOnLanResult {
  readonly success: true;
  readonly message: string;
  readonly output: string;
}

/** How many times the packet is sent. */
export const wolRepeats = 3;

/** The magic packet for a canonical MAC. */
export function magicPacket(canonicalMac: string): Buffer {
  const mac = macBytes(canonicalMac);
  return Buffer.concat([Buffer.alloc(6, 0xff), ...Array.from({ length: 16 }, () => mac)]);
}

/** Validates the request (`invalid`, naming the field) and returns what will be sent where. */
export function parseWakeOnLan(
  request: WakeOnLanRequest,
  defaults: WakeOnLanDefaults,
): { mac: string; broadcast: string; port: number } {
  const mac = normalizeMac(request.devMac);
  if (mac === null) {
    throw new DomainError(
      'invalid',
      "Invalid field 'devMac': expected a MAC address such as aa:bb:cc:dd:ee:ff, aa-bb-cc-dd-ee-ff, aabb.ccdd.eeff or aabbccddeeff.",
      { code: 'INVALID_MAC' },
    );
  }
  if (request.broadcast !== undefined && ipVersion(request.broadcast) !== 4) {
    throw new DomainError(
      'invalid',
      "Invalid field 'broadcast': expected an IPv4 address such as 192.168.1.255.",
      { code: 'INVALID_BROADCAST' },
    );
  }
  const broadcast = request.broadcast ?? defaults.broadcast;
  const port = request.port ?? defaults.port;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new DomainError('invalid', "Invalid field 'port': expected an integer from 1 to 65535.", {
      code: 'INVALID_PORT',
    });
  }
  return { mac, broadcast, port };
}

/** Sends the magic packet; a socket error is `command-failed` carrying the system's message. */
export async function wakeOnLan(
  request: WakeOnLanRequest,
  defaults: WakeOnLanDefaults,
): Promise<WakeOnLanResult> {
  const { mac, broadcast, port } = parseWakeOnLan(request, defaults);
  const packet = magicPacket(mac);
  const socket = createSocket('udp4');
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, () => {
        socket.removeListener('error', reject);
        resolve();
      });
    });
    socket.setBroadcast(true);
    for (let i = 0; i < wolRepeats; i++) {
      await new Promise<void>((resolve, reject) => {
        socket.send(packet, port, broadcast, (err) => {
          if (err) reject(err);
          else resolve();
        });
      });
    }
  } catch (err) {
    throw new DomainError(
      'command-failed',
      `The Wake-on-LAN packet could not be sent to ${broadcast}:${port}.`,
      {
        code: 'WOL_SEND_FAILED',
        reason: 'Command failed',
        details: err instanceof Error ? err.message : String(err),
      },
    );
  } finally {
    socket.close();
  }
  return {
    success: true,
    message: 'WOL packet sent',
    output: `Sent magic packet to ${broadcast}:${port} with ${mac}`,
  };
}

/**
 * NetBIOS node status (RFC 1002, 4.2.17-4.2.18), written by hand: the request is 50 bytes and the
 * answer a list of 18-byte entries. We ask for the wildcard name `*` on the device's UDP port 137
 * and take the first unique (not group) name with suffix 0x00: the workstation name.
 */
import { randomInt } from 'node:crypto';
import { udpQuery, type UdpOutcome } from './udp.js';

const nbstat = 0x0021;
const classIn = 0x0001;

/** RFC 1001 first-level encoding of a 16-byte NetBIOS name: each nibble as 'A' + nibble. */
function encodeNetbiosName(name: Buffer): Buffer {
  const out = Buffer.alloc(34);
  out[0] = 32;
  for (let i = 0; i < 16; i++) {
    const byte = name[i] ?? 0;
    out[1 + 2 * i] = 0x41 + (byte >> 4);
    out[2 + 2 * i] = 0x41 + (byte & 0x0f);
  }
  out[33] = 0;
  return out;
}

/** The node status request for `*` (padded with NULs, as nmblookup -A and nbtscan send it). */
export function nodeStatusRequest(id: number): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  header.writeUInt16BE(0x0000, 2); // query, opcode 0, no flags
  header.writeUInt16BE(1, 4); // QDCOUNT
  const wildcard = Buffer.alloc(16);
  wildcard[0] = 0x2a; // '*'
  const tail = Buffer.alloc(4);
  tail.writeUInt16BE(nbstat, 0);
  tail.writeUInt16BE(classIn, 2);
  return Buffer.concat([header, encodeNetbiosName(wildcard), tail]);
}

export interface NetbiosName {
  readonly name: string;
  readonly suffix: number;
  readonly group: boolean;
}

/** Skips a (possibly compressed) name at `offset`; the offset after it, or -1 when it is cut short. */
function skipName(message: Buffer, offset: number): number {
  for (let guard = 0; guard < 64; guard++) {
    const length = message[offset];
    if (length === undefined) return -1;
    if ((length & 0xc0) === 0xc0) return offset + 2;
    if (length === 0) return offset + 1;
    offset += 1 + length;
  }
  return -1;
}

/** The names of a node status response with transaction id `id`, or undefined when it is not one. */
export function parseNodeStatus(message: Buffer, id: number): NetbiosName[] | undefined {
  if (message.length < 12 || message.readUInt16BE(0) !== id) return undefined;
  const flags = message.readUInt16BE(2);
  if ((flags & 0x8000) === 0 || (flags & 0x000f) !== 0) return undefined; // a response, RCODE 0
  if (message.readUInt16BE(6) < 1) return undefined; // ANCOUNT
  let offset = 12;
  for (let q = message.readUInt16BE(4); q > 0 && offset !== -1; q--) {
    offset = skipName(message, offset);
    if (offset !== -1) offset += 4;
  }
  if (offset !== -1) offset = skipName(message, offset);
  if (offset === -1 || offset + 10 > message.length) return undefined;
  if (message.readUInt16BE(offset) !== nbstat) return undefined;
  const rdLength = message.readUInt16BE(offset + 8);
  offset += 10;
  const end = offset + rdLength;
  if (end > message.length || rdLength < 1) return undefined;
  const count = message[offset] ?? 0;
  offset += 1;
  if (offset + count * 18 > end) return undefined;
  const names: NetbiosName[] = [];
  for (let i = 0; i < count; i++, offset += 18) {
    names.push({
      // OEM character set; latin1 keeps every byte visible to the clean-name check.
      name: message
        .subarray(offset, offset + 15)
        .toString('latin1')
        .replace(/[ \0]+$/, ''),
      suffix: message[offset + 15] ?? -1,
      group: ((message[offset + 16] ?? 0) & 0x80) !== 0,
    });
  }
  return names;
}

/** The workstation name of a node status answer: the first unique name with suffix 0x00. */
export function workstationName(names: readonly NetbiosName[]): string {
  return names.find((n) => n.suffix === 0x00 && !n.group)?.name ?? '';
}

export interface NetbiosQuery {
  readonly ip: string;
  readonly port: number;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

export function queryNetbios(query: NetbiosQuery): Promise<UdpOutcome<string>> {
  const id = randomInt(1, 65536);
  return udpQuery({
    host: query.ip,
    port: query.port,
    message: nodeStatusRequest(id),
    timeoutMs: query.timeoutMs,
    signal: query.signal,
    accept: (datagram) => {
      const names = parseNodeStatus(datagram, id);
      return names === undefined ? undefined : workstationName(names);
    },
  });
}

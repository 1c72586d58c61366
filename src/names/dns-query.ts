/**
 * A reverse-address (PTR) question as a DNS message, and its answer, with the `dns-packet`
 * library: shared by reverse DNS (to DNS_SERVER, recursion desired) and mDNS (unicast to the
 * device's port 5353, as `dig -p 5353 @ip -x ip` asks; Avahi and Apple's responder answer it).
 */
import { randomInt } from 'node:crypto';
import { isIPv4 } from 'node:net';
import dnsPacket from 'dns-packet';
import { udpQuery, type UdpOutcome } from './udp.js';

/** `4.3.2.1.in-addr.arpa` for 1.2.3.4; the nibble form under ip6.arpa for IPv6. */
export function reverseName(ip: string): string {
  if (isIPv4(ip)) return `${ip.split('.').reverse().join('.')}.in-addr.arpa`;
  const halves = ip.split('::');
  const groups = (part: string | undefined): string[] => (part ? part.split(':') : []);
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  const full = [...head, ...Array<string>(8 - head.length - tail.length).fill('0'), ...tail];
  const nibbles = full.map((g) => g.padStart(4, '0')).join('');
  return `${nibbles.split('').reverse().join('.')}.ip6.arpa`;
}

export interface PtrQuery {
  readonly server: string;
  readonly port: number;
  readonly ip: string;
  readonly timeoutMs: number;
  readonly recursionDesired: boolean;
  readonly signal?: AbortSignal;
}

/** The PTR target (as sent, trailing dot removed), '' for an answer without one (NXDOMAIN, no data). */
export function queryPtr(query: PtrQuery): Promise<UdpOutcome<string>> {
  const id = randomInt(1, 65536);
  const name = reverseName(query.ip);
  const message = dnsPacket.encode({
    type: 'query',
    id,
    flags: query.recursionDesired ? dnsPacket.RECURSION_DESIRED : 0,
    questions: [{ type: 'PTR', class: 'IN', name }],
  });
  return udpQuery({
    host: query.server,
    port: query.port,
    message,
    timeoutMs: query.timeoutMs,
    signal: query.signal,
    accept: (datagram) => {
      const packet = dnsPacket.decode(datagram);
      if (packet.type !== 'response' || packet.id !== id) return undefined;
      // Multicast-style answers may omit the question; when present it must be ours.
      const question = packet.questions?.[0];
      if (question !== undefined && question.name.toLowerCase() !== name) return undefined;
      for (const answer of packet.answers ?? [])
        if (answer.type === 'PTR' && answer.name.toLowerCase() === name && typeof answer.data === 'string')
          return answer.data.replace(/\.$/, '');
      return '';
    },
  });
}

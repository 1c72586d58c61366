/**
 * A tiny authoritative DNS stand-in on loopback (node:dgram, UDP): A records for the names it is
 * given, PTR records for their addresses, NOERROR/no-data for other types of a known name, and
 * NXDOMAIN for everything else. Tests point DNS_SERVER at it so that no lookup ever leaves the
 * machine. It counts the queries it answered.
 */
import { createSocket, type Socket } from 'node:dgram';

export interface DnsStandIn {
  readonly host: string;
  readonly port: number;
  /** `host:port`, ready for DNS_SERVER. */
  readonly address: string;
  /** Queries answered so far, as `name/type`. */
  readonly queries: string[];
  close(): Promise<void>;
}

function readName(message: Buffer, start: number): { name: string; end: number } {
  const labels: string[] = [];
  let offset = start;
  for (;;) {
    const length = message[offset];
    if (length === undefined) throw new Error('truncated name');
    if (length === 0) return { name: labels.join('.'), end: offset + 1 };
    labels.push(message.subarray(offset + 1, offset + 1 + length).toString('latin1'));
    offset += 1 + length;
  }
}

function encodeName(name: string): Buffer {
  const parts = name
    .replace(/\.$/, '')
    .split('.')
    .filter((label) => label !== '')
    .map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label, 'latin1')]));
  return Buffer.concat([...parts, Buffer.from([0])]);
}

function reverseName(ipv4: string): string {
  return `${ipv4.split('.').reverse().join('.')}.in-addr.arpa`;
}

export interface DnsStandInOptions {
  /** Loopback address to bind; default 127.0.0.1. */
  readonly host?: string;
  /** UDP port; default 0 (random). Tools that always ask port 53 (nmap) need 53 here. */
  readonly port?: number;
}

/**
 * A random loopback address 127.x.y.z (x, y, z in 1..254), so that several stand-ins can listen on
 * port 53 at once (concurrent test files) without colliding.
 */
export function randomLoopbackAddress(): string {
  const octet = (): number => 1 + Math.floor(Math.random() * 254);
  return `127.${octet()}.${octet()}.${octet()}`;
}

/**
 * Starts the stand-in (default 127.0.0.1 and a random port). `records` maps lowercase names to
 * IPv4 addresses, e.g. { 'printer.test': '10.0.0.5' }.
 */
export async function startDnsStandIn(
  records: Record<string, string>,
  options: DnsStandInOptions = {},
): Promise<DnsStandIn> {
  const bindHost = options.host ?? '127.0.0.1';
  const forward = new Map(Object.entries(records).map(([name, ip]) => [name.toLowerCase(), ip]));
  const reverse = new Map([...forward].map(([name, ip]) => [reverseName(ip), name]));
  const queries: string[] = [];
  const socket: Socket = createSocket('udp4');
  socket.on('message', (message, remote) => {
    try {
      const { name, end } = readName(message, 12);
      const type = message.readUInt16BE(end);
      const lower = name.toLowerCase();
      queries.push(`${lower}/${type}`);
      const question = message.subarray(12, end + 4);
      const answers: Buffer[] = [];
      let rcode = 0;
      const known = forward.has(lower) || reverse.has(lower);
      if (!known) rcode = 3;
      else if (type === 1 && forward.has(lower)) {
        const rdata = Buffer.from((forward.get(lower) ?? '0.0.0.0').split('.').map(Number));
        answers.push(resourceRecord(1, rdata));
      } else if (type === 12 && reverse.has(lower)) {
        answers.push(resourceRecord(12, encodeName(reverse.get(lower) ?? '')));
      }
      const header = Buffer.alloc(12);
      header.writeUInt16BE(message.readUInt16BE(0), 0);
      // QR=1, opcode copied, AA=1, RD copied, RA=1, rcode.
      const flags = 0x8000 | (message.readUInt16BE(2) & 0x7900) | 0x0400 | 0x0080 | rcode;
      header.writeUInt16BE(flags, 2);
      header.writeUInt16BE(1, 4);
      header.writeUInt16BE(answers.length, 6);
      socket.send(Buffer.concat([header, question, ...answers]), remote.port, remote.address);
    } catch {
      // Malformed query: no answer, as a real server might do.
    }
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(options.port ?? 0, bindHost, () => {
      socket.removeListener('error', reject);
      resolve();
    });
  });
  const port = socket.address().port;
  return {
    host: bindHost,
    port,
    address: `${bindHost}:${port}`,
    queries,
    close: () =>
      new Promise<void>((resolve) => {
        socket.close(() => {
          resolve();
        });
      }),
  };
}

/** An answer record pointing at the question's name (compression pointer to offset 12). */
function resourceRecord(type: number, rdata: Buffer): Buffer {
  const fixed = Buffer.alloc(12);
  fixed.writeUInt16BE(0xc00c, 0);
  fixed.writeUInt16BE(type, 2);
  fixed.writeUInt16BE(1, 4); // class IN
  fixed.writeUInt32BE(60, 6); // TTL
  fixed.writeUInt16BE(rdata.length, 10);
  return Buffer.concat([fixed, rdata]);
}

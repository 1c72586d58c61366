/**
 * Small mDNS and NetBIOS responders for the naming tests, in process on loopback or, run as a
 * script (`node name-responders.js mdns|netbios <bind> <port> <mode> <name> [<ip>]`), inside a
 * test namespace. Each can misbehave on purpose: `garbage` answers random bytes, `late` answers
 * after 3 s, `flood` sends 500 answers with wrong transaction ids (naming `flood-<n>`) before the
 * right one, `silent` reads and never answers. The mDNS answers are built with dns-packet, as
 * Avahi's are DNS messages; the NetBIOS answer follows RFC 1002 4.2.18 (node status response),
 * checked against a real nmbd answer (test/fixtures/names/nbstat-nmbd.hex).
 */
import { randomBytes } from 'node:crypto';
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { fileURLToPath } from 'node:url';
import dnsPacket from 'dns-packet';

export type ResponderMode = 'answer' | 'garbage' | 'late' | 'flood' | 'silent';

export interface Responder {
  readonly port: number;
  /** Questions received so far. */
  readonly questions: () => number;
  close(): Promise<void>;
}

type Answer = (query: Buffer, id: number) => Buffer | undefined;

function serve(socket: Socket, mode: ResponderMode, answer: Answer): { questions: () => number } {
  let questions = 0;
  socket.on('message', (query: Buffer, remote: RemoteInfo) => {
    questions++;
    if (query.length < 12 || mode === 'silent') return;
    const id = query.readUInt16BE(0);
    const reply = (message: Buffer): void => {
      socket.send(message, remote.port, remote.address);
    };
    const good = answer(query, id);
    if (good === undefined) return;
    switch (mode) {
      case 'answer':
        reply(good);
        break;
      case 'garbage':
        reply(randomBytes(48));
        break;
      case 'late':
        setTimeout(() => {
          reply(good);
        }, 3000).unref();
        break;
      case 'flood':
        for (let n = 0; n < 500; n++) {
          const wrong = answer(query, (id + 1 + n) % 65536);
          if (wrong) reply(wrong);
        }
        reply(good);
        break;
    }
  });
  return { questions: () => questions };
}

/** An mDNS responder answering reverse-address PTR questions: `names` maps IPv4 to host name. */
export function mdnsAnswer(names: Record<string, string>): Answer {
  return (query, id) => {
    const packet = dnsPacket.decode(query);
    const question = packet.questions?.[0];
    if (question?.type !== 'PTR') return undefined;
    const ip = question.name
      .replace(/\.in-addr\.arpa$/i, '')
      .split('.')
      .reverse()
      .join('.');
    const name = names[ip];
    if (name === undefined) return undefined;
    return dnsPacket.encode({
      type: 'response',
      id,
      flags: dnsPacket.AUTHORITATIVE_ANSWER,
      questions: [question],
      answers: [{ type: 'PTR', class: 'IN', name: question.name, ttl: 120, data: `${name}.local` }],
    });
  };
}

/** A NetBIOS node status answer naming `name`: WORKGROUP<00> (group) first, then name<00>, name<20>. */
export function netbiosAnswer(name: string): Answer {
  return (query, id) => {
    if (query.length < 50 || query.readUInt16BE(query.length - 4) !== 0x0021) return undefined;
    const entry = (text: string, suffix: number, flags: number): Buffer => {
      const out = Buffer.alloc(18, 0x20);
      out.write(text.slice(0, 15), 0, 'latin1');
      out[15] = suffix;
      out.writeUInt16BE(flags, 16);
      return out;
    };
    const names = [entry('WORKGROUP', 0x00, 0x8400), entry(name, 0x00, 0x0400), entry(name, 0x20, 0x0400)];
    const statistics = Buffer.alloc(46);
    const rdata = Buffer.concat([Buffer.from([names.length]), ...names, statistics]);
    const header = Buffer.alloc(12);
    header.writeUInt16BE(id, 0);
    header.writeUInt16BE(0x8400, 2); // response, authoritative
    header.writeUInt16BE(1, 6); // ANCOUNT
    const rr = Buffer.alloc(10);
    rr.writeUInt16BE(0x0021, 0);
    rr.writeUInt16BE(0x0001, 2);
    rr.writeUInt16BE(rdata.length, 8);
    return Buffer.concat([header, query.subarray(12, 46), rr, rdata]);
  };
}

/** A free UDP port on `host` (bound once and released), for responders that share one port. */
export async function freeUdpPort(host = '127.0.0.1'): Promise<number> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => {
    socket.bind(0, host, resolve);
  });
  const { port } = socket.address();
  await new Promise<void>((resolve) => {
    socket.close(resolve);
  });
  return port;
}

export async function startResponder(
  host: string,
  port: number,
  mode: ResponderMode,
  answer: Answer,
): Promise<Responder> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, host, () => {
      resolve();
    });
  });
  const { questions } = serve(socket, mode, answer);
  return {
    port: socket.address().port,
    questions,
    close: () =>
      new Promise<void>((resolve) => {
        socket.close(() => {
          resolve();
        });
      }),
  };
}

// Run as a script inside a namespace: prints "listening <port>" once bound.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [kind, bind = '0.0.0.0', port = '0', mode = 'answer', name = 'host', ip = ''] = process.argv.slice(2);
  const answer = kind === 'mdns' ? mdnsAnswer({ [ip]: name }) : netbiosAnswer(name);
  const responder = await startResponder(bind, Number(port), mode as ResponderMode, answer);
  process.stdout.write(`listening ${responder.port}\n`);
}

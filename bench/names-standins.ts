/**
 * Child process of the naming benchmark: the name sources' stand-ins for the fake arp-scan's
 * 2,000 loopback hosts (test/helpers/fake-arp-scan.ts): an mDNS and a NetBIOS responder bound to
 * each host's own address (one port for all), a DNS server answering every host's PTR, and a DNS
 * server that never answers. Prints `{"mdns","netbios","dns","silentDns"}` once listening.
 */
import { createSocket } from 'node:dgram';
import { startDnsStandIn } from '../test/helpers/dns.js';
import { mdnsAnswer, netbiosAnswer, startResponder } from '../test/helpers/name-responders.js';

const hosts = Number(process.env.BENCH_HOSTS ?? '2000');
/** The fake arp-scan's address of host k. */
const ipOf = (k: number): string => `127.0.${Math.floor(k / 250)}.${(k % 250) + 1}`;

async function sameAddressPort(kind: 'mdns' | 'netbios'): Promise<number> {
  let port = 0;
  for (let k = 0; k < hosts; k++) {
    const ip = ipOf(k);
    const answer = kind === 'mdns' ? mdnsAnswer({ [ip]: `host-${k}` }) : netbiosAnswer(`HOST-${k}`);
    port = (await startResponder(ip, port, 'answer', answer)).port;
  }
  return port;
}

const mdns = await sameAddressPort('mdns');
const netbios = await sameAddressPort('netbios');
const dns = await startDnsStandIn(
  Object.fromEntries(Array.from({ length: hosts }, (_, k) => [`host-${k}.bench.lan`, ipOf(k)])),
);
const silent = createSocket('udp4');
await new Promise<void>((resolve) => {
  silent.bind(0, '127.0.0.1', resolve);
});
console.log(
  JSON.stringify({ mdns, netbios, dns: dns.address, silentDns: `127.0.0.1:${silent.address().port}` }),
);

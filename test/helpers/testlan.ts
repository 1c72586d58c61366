/**
 * TEST LAN: a small network of Linux network namespaces that a test builds, uses and removes, so
 * that tools (traceroute, nmap, arp-scan, Wake-on-LAN, speed tests) have real hosts to talk to
 * without sending one packet outside this machine. Needs root (`ip netns`), see `testLanSkipReason`.
 *
 * Topology (X is chosen at random per LAN from 10.231.0.0/16, a multiple of 4, and claimed with a
 * lock file in /run/netkeep-testlan, so concurrent test files do not collide; every name carries
 * the per-run prefix `nk<pid>x<random>-`):
 *
 *   root namespace (the server under test)
 *     <prefix>l  10.231.X.2/24 ──veth── bridge br0 in <prefix>rt (router, 10.231.X.1/24)
 *                                          ├── host namespaces <prefix><name>: eth0 10.231.X.<n>/24
 *                                          └── far0 10.231.(X+1).1/24 ──veth── <prefix>rt2 (router 2)
 *                                                                          eth0 10.231.(X+1).2/24
 *                                                                          eth1 10.231.(X+2).1/24 ── far host
 *                                                                          <prefix>far: eth0 10.231.(X+2).10/24
 *
 * The root namespace sits directly on the LAN (`lanInterface`, so arp-scan/nmap -sn see the hosts at
 * layer 2) and reaches the far subnets through the router: routes are added in the root namespace
 * ONLY for this LAN's own 10.231.(X+1).0/24 and 10.231.(X+2).0/24. The far host is two routers away
 * (traceroute lists 10.231.X.1, 10.231.(X+1).2, then the host).
 *
 * Cleanup: `destroy()` kills every process started with `spawn`, deletes every namespace (which
 * removes their veths, the root-side veth with its routes) and /etc/netns/<name>. It is also run
 * synchronously at process exit, and `createTestLan` first removes leftovers of crashed runs (names
 * `nk<pid>x...` whose pid is gone). Register `after(() => lan.destroy())` in the test.
 *
 * API summary:
 *   testLanSkipReason(what?): string | undefined   skip reason (not root, no `ip`); undefined under CI=true
 *   testLanMissing(): string | undefined           why a LAN cannot be built
 *   createTestLan({ hosts?, far? }): Promise<TestLan>
 *   lan.subnet / lan.gateway / lan.routerMac / lan.rootAddress / lan.broadcast / lan.lanInterface / lan.farSubnet
 *   lan.hosts: Map<name, LanHost>;  lan.far: LanHost | undefined  (LanHost = { name, ns, ip, mac })
 *   lan.addHost(name, { ip?, mac? }) / lan.removeHost(name) / lan.setHostIp(name, ip) / lan.setHostMac
 *   lan.freeIp(): an unused LAN address (e.g. for a host that does not answer)
 *   lan.exec(ns, argv) → stdout (throws on failure);  lan.spawn(ns, argv) → LanProcess (tracked)
 *   lan.node(ns, script, args?) → LanProcess running `node -e script` in the namespace
 *   lan.tcpListener(host, ports, banner?) → LanProcess: TCP servers that write `banner` on connect
 *   lan.udpRecorder(host, port) → LanProcess: prints `<from> <hex payload>` per datagram received
 *   lan.rateLimit(host, mbit) → tbf on both ends of the host's link (both directions)
 *   lan.ipv6Prefix: this LAN's unique-local /64 (fd00:231:X::/64, unused until addIpv6)
 *   lan.addIpv6(host | 'root', n) → fd00:231:X::n on the host's eth0 (or the root-side veth);
 *     lan.removeIpv4(name) leaves a host IPv6-only. IPv6 stays on the test LAN: the addresses are
 *     on its links only, and the root namespace gets no route beyond the LAN's own /64.
 *   lan.isolatedNamespace(resolvConf?) → a namespace with only `lo` (optionally its own resolv.conf)
 *   lan.destroy()
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes, randomInt } from 'node:crypto';
import { createInterface } from 'node:readline';
import { skipUnlessCi } from './requirements.js';

export interface LanHost {
  readonly name: string;
  /** Namespace name (use with `lan.exec`, `lan.spawn`). */
  readonly ns: string;
  ip: string;
  mac: string;
}

/** A process running in a namespace, its stdout collected line by line. */
export interface LanProcess {
  readonly child: ChildProcess;
  readonly lines: string[];
  /** Resolves with the first line (already seen or future) that matches. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  stop(): Promise<void>;
}

export interface TestLanOptions {
  /** Hosts on the bridge, named h1..hN. Default 2. */
  readonly hosts?: number;
  /** Build the second router and the far host. Default true. */
  readonly far?: boolean;
}

export interface TestLan {
  readonly prefix: string;
  /** The LAN, e.g. 10.231.40.0/24. */
  readonly subnet: string;
  /** The router's LAN address (default gateway of the hosts). */
  readonly gateway: string;
  /**
   * The MAC the router answers with on the LAN (its bridge's). Fixed for the LAN's lifetime: a
   * presence scan sees the router as one more device.
   */
  readonly routerMac: string;
  /** The root namespace's address on the LAN. */
  readonly rootAddress: string;
  /** The LAN's broadcast address. */
  readonly broadcast: string;
  /** The root-namespace interface on the LAN. */
  readonly lanInterface: string;
  /** Subnet of the far host (two routers away), or undefined. */
  readonly farSubnet: string | undefined;
  readonly routerNs: string;
  readonly router2Ns: string | undefined;
  readonly hosts: Map<string, LanHost>;
  readonly far: LanHost | undefined;
  addHost(name: string, options?: { ip?: string; mac?: string }): Promise<LanHost>;
  removeHost(name: string): Promise<void>;
  setHostIp(name: string, ip: string): Promise<void>;
  setHostMac(name: string, mac: string): Promise<void>;
  freeIp(): string;
  exec(ns: string, argv: readonly string[]): Promise<string>;
  spawn(ns: string, argv: readonly string[]): LanProcess;
  node(ns: string, script: string, args?: readonly string[]): LanProcess;
  tcpListener(host: LanHost, ports: readonly number[], banner?: string): Promise<LanProcess>;
  udpRecorder(host: LanHost, port: number): Promise<LanProcess>;
  rateLimit(host: LanHost, mbit: number): Promise<void>;
  /** The LAN's unique-local /64, e.g. `fd00:231:40::/64`. */
  readonly ipv6Prefix: string;
  addIpv6(target: LanHost | 'root', n: number): Promise<string>;
  removeIpv4(name: string): Promise<void>;
  isolatedNamespace(resolvConf?: string): Promise<string>;
  destroy(): Promise<void>;
}

const IP = '/usr/sbin/ip';
const TC = '/usr/sbin/tc';

/** Why this process cannot build a test LAN, or undefined when it can. */
export function testLanMissing(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root for ip netns (run the tests as root)';
  if (!existsSync(IP)) return 'needs iproute2 (/usr/sbin/ip)';
  return undefined;
}

/**
 * The `skip` option of a suite that needs a test LAN: why it cannot be built, outside CI; under CI
 * (`CI=true`) undefined, so the suite runs and fails naming what is missing.
 */
export function testLanSkipReason(what = 'test LAN tests'): string | undefined {
  return skipUnlessCi(testLanMissing(), what);
}

function run(argv: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const [command = '', ...args] = argv;
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve(out);
      else reject(new Error(`'${argv.join(' ')}' failed (${code}): ${err.trim()}`));
    });
  });
}

function randomMac(): string {
  const bytes = randomBytes(6);
  bytes[0] = ((bytes[0] ?? 0) & 0xfe) | 0x02; // unicast, locally administered
  return [...bytes].map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/** Namespaces of all live LANs of this process, for the exit handler. */
const liveNamespaces = new Set<string>();
const liveProcesses = new Set<ChildProcess>();
let exitHandlerInstalled = false;

function cleanupSync(): void {
  for (const child of liveProcesses) child.kill('SIGKILL');
  for (const ns of liveNamespaces) {
    spawnSync(IP, ['netns', 'del', ns], { stdio: 'ignore' });
    rmSync(`/etc/netns/${ns}`, { recursive: true, force: true });
  }
  liveNamespaces.clear();
  for (const x of liveBlocks) releaseBlock(x);
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes namespaces (and /etc/netns dirs) left by test runs whose process is gone. */
function removeStaleNamespaces(): void {
  const dirs = ['/run/netns', '/etc/netns'];
  for (const dir of dirs) {
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      const match = /^nk(\d+)x[0-9a-f]+-/.exec(name);
      if (!match?.[1] || pidAlive(Number(match[1]))) continue;
      if (dir === '/run/netns') spawnSync(IP, ['netns', 'del', name], { stdio: 'ignore' });
      else rmSync(`${dir}/${name}`, { recursive: true, force: true });
    }
  }
}

/**
 * Blocks claimed by a test process: /run/netkeep-testlan/<X> holds the owner's pid, created with
 * O_EXCL. The routing table alone cannot tell two test files starting together apart (the route
 * appears only once the LAN is built), nor a LAN whose interface a test has set down (no route).
 */
const blockLockDir = '/run/netkeep-testlan';
const liveBlocks = new Set<number>();

function claimBlock(x: number): boolean {
  mkdirSync(blockLockDir, { recursive: true });
  const file = `${blockLockDir}/${x}`;
  // Written under a private name, then linked into place: a claim never exists without its pid.
  const mine = `${blockLockDir}/.${process.pid}-${x}`;
  writeFileSync(mine, String(process.pid));
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        linkSync(mine, file);
        liveBlocks.add(x);
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      let owner = 0;
      try {
        owner = Number(readFileSync(file, 'utf8'));
      } catch {
        continue; // released meanwhile
      }
      if (owner > 0 && pidAlive(owner)) return false;
      // A dead owner's claim (a crashed run): taken over. Two runs doing this for the same block
      // at the same instant could both succeed; that needs a crash first and is left at that.
      rmSync(file, { force: true });
    }
    return false;
  } finally {
    rmSync(mine, { force: true });
  }
}

function releaseBlock(x: number): void {
  rmSync(`${blockLockDir}/${x}`, { force: true });
  liveBlocks.delete(x);
}

/** Third octets X (multiple of 4) already routed in the root namespace. */
async function usedBlocks(): Promise<Set<number>> {
  const routes = await run([IP, '-4', 'route', 'show']);
  const used = new Set<number>();
  for (const match of routes.matchAll(/10\.231\.(\d+)\./g)) used.add(Math.floor(Number(match[1]) / 4) * 4);
  return used;
}

/** Builds a test LAN. Throws when it cannot (call testLanSkipReason first to skip instead). */
export async function createTestLan(options: TestLanOptions = {}): Promise<TestLan> {
  const reason = testLanMissing();
  if (reason) throw new Error(`cannot build a test LAN: ${reason}`);
  if (!exitHandlerInstalled) {
    exitHandlerInstalled = true;
    process.once('exit', cleanupSync);
  }
  removeStaleNamespaces();
  const used = await usedBlocks();
  const free = Array.from({ length: 64 }, (_, i) => i * 4).filter((x) => !used.has(x));
  // Random order, so that concurrent test files rarely even try the same block.
  for (let i = free.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [free[i], free[j]] = [free[j] ?? 0, free[i] ?? 0];
  }
  const x = free.find(claimBlock);
  if (x === undefined) throw new Error('no free 10.231.x.0/22 block for a test LAN');
  // Unique by construction (pid, claimed block); `<prefix>l` fits the 15 characters of an interface
  // name even with a 7-digit pid.
  const prefix = `nk${process.pid}x${x.toString(16)}-`;
  const lan = new Lan(prefix, x);
  try {
    await lan.build(options.hosts ?? 2, options.far ?? true);
  } catch (err) {
    await lan.destroy();
    throw err;
  }
  return lan;
}

/**
 * `address` as the kernel and netkeep print it (RFC 5952: the longest run of zero groups
 * compressed): block 0's `fd00:231:0::11` is `fd00:231::11`.
 */
function canonicalIpv6(address: string): string {
  return new URL(`http://[${address}]/`).hostname.slice(1, -1);
}

class Lan implements TestLan {
  readonly subnet: string;
  readonly gateway: string;
  readonly routerMac = randomMac();
  readonly rootAddress: string;
  readonly broadcast: string;
  readonly lanInterface: string;
  readonly farSubnet: string | undefined;
  readonly routerNs: string;
  readonly ipv6Prefix: string;
  router2Ns: string | undefined;
  readonly hosts = new Map<string, LanHost>();
  far: LanHost | undefined;
  private readonly namespaces = new Set<string>();
  private readonly processes = new Set<ChildProcess>();
  private readonly ports = new Map<string, string>();
  private portCounter = 0;
  private nextHostOctet = 10;
  private destroyed = false;

  constructor(
    readonly prefix: string,
    private readonly x: number,
  ) {
    this.subnet = `10.231.${x}.0/24`;
    this.gateway = `10.231.${x}.1`;
    this.rootAddress = `10.231.${x}.2`;
    this.broadcast = `10.231.${x}.255`;
    this.lanInterface = `${prefix}l`;
    this.farSubnet = `10.231.${x + 2}.0/24`;
    this.routerNs = `${prefix}rt`;
    this.ipv6Prefix = `${canonicalIpv6(`fd00:231:${x}::`)}/64`;
  }

  private async addNamespace(name: string): Promise<string> {
    await run([IP, 'netns', 'add', name]);
    this.namespaces.add(name);
    liveNamespaces.add(name);
    await this.exec(name, [IP, 'link', 'set', 'lo', 'up']);
    return name;
  }

  private sysctl(ns: string, key: string, value: string): Promise<string> {
    return this.exec(ns, ['/usr/sbin/sysctl', '-q', '-w', `${key}=${value}`]);
  }

  async build(hostCount: number, withFar: boolean): Promise<void> {
    const rt = await this.addNamespace(this.routerNs);
    // ICMP rate limits would turn traceroute's answers into '*'; forwarding makes it a router.
    await this.sysctl(rt, 'net.ipv4.ip_forward', '1');
    await this.sysctl(rt, 'net.ipv4.icmp_ratelimit', '0');
    // An explicit address: otherwise the bridge takes its lowest port's MAC, so adding or removing
    // a host could change the router's MAC (a presence scan would see a new device).
    await this.exec(rt, [IP, 'link', 'add', 'br0', 'address', this.routerMac, 'type', 'bridge']);
    await this.exec(rt, [IP, 'addr', 'add', `${this.gateway}/24`, 'dev', 'br0']);
    await this.exec(rt, [IP, 'link', 'set', 'br0', 'up']);
    // The root namespace's leg on the LAN.
    await run([IP, 'link', 'add', this.lanInterface, 'type', 'veth', 'peer', 'name', 'lroot', 'netns', rt]);
    await this.exec(rt, [IP, 'link', 'set', 'lroot', 'master', 'br0', 'up']);
    await run([IP, 'addr', 'add', `${this.rootAddress}/24`, 'dev', this.lanInterface]);
    await run([IP, 'link', 'set', this.lanInterface, 'up']);
    for (let i = 1; i <= hostCount; i++) await this.addHost(`h${i}`);
    if (!withFar) return;
    const x = this.x;
    const rt2 = await this.addNamespace(`${this.prefix}rt2`);
    this.router2Ns = rt2;
    await this.sysctl(rt2, 'net.ipv4.ip_forward', '1');
    await this.sysctl(rt2, 'net.ipv4.icmp_ratelimit', '0');
    await run([IP, 'link', 'add', 'far0', 'netns', rt, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', rt2]);
    await this.exec(rt, [IP, 'addr', 'add', `10.231.${x + 1}.1/24`, 'dev', 'far0']);
    await this.exec(rt, [IP, 'link', 'set', 'far0', 'up']);
    await this.exec(rt2, [IP, 'addr', 'add', `10.231.${x + 1}.2/24`, 'dev', 'eth0']);
    await this.exec(rt2, [IP, 'link', 'set', 'eth0', 'up']);
    await this.exec(rt2, [IP, 'route', 'add', 'default', 'via', `10.231.${x + 1}.1`]);
    await this.exec(rt, [IP, 'route', 'add', `10.231.${x + 2}.0/24`, 'via', `10.231.${x + 1}.2`]);
    const farNs = await this.addNamespace(`${this.prefix}far`);
    const farMac = randomMac();
    await run([
      IP,
      'link',
      'add',
      'eth1',
      'netns',
      rt2,
      'type',
      'veth',
      'peer',
      'name',
      'eth0',
      'netns',
      farNs,
    ]);
    await this.exec(rt2, [IP, 'addr', 'add', `10.231.${x + 2}.1/24`, 'dev', 'eth1']);
    await this.exec(rt2, [IP, 'link', 'set', 'eth1', 'up']);
    await this.exec(farNs, [IP, 'link', 'set', 'eth0', 'address', farMac]);
    await this.exec(farNs, [IP, 'addr', 'add', `10.231.${x + 2}.10/24`, 'dev', 'eth0']);
    await this.exec(farNs, [IP, 'link', 'set', 'eth0', 'up']);
    await this.exec(farNs, [IP, 'route', 'add', 'default', 'via', `10.231.${x + 2}.1`]);
    this.far = { name: 'far', ns: farNs, ip: `10.231.${x + 2}.10`, mac: farMac };
    // Root namespace: routes for this LAN's own far subnets only.
    await run([IP, 'route', 'add', `10.231.${x + 1}.0/24`, 'via', this.gateway, 'dev', this.lanInterface]);
    await run([IP, 'route', 'add', `10.231.${x + 2}.0/24`, 'via', this.gateway, 'dev', this.lanInterface]);
  }

  freeIp(): string {
    const taken = new Set([...this.hosts.values()].map((h) => h.ip));
    for (let octet = 200; octet < 255; octet++) {
      const ip = `10.231.${this.x}.${octet}`;
      if (!taken.has(ip)) return ip;
    }
    throw new Error('no free address on the test LAN');
  }

  async addHost(name: string, options: { ip?: string; mac?: string } = {}): Promise<LanHost> {
    if (this.hosts.has(name)) throw new Error(`host ${name} exists`);
    const ns = await this.addNamespace(`${this.prefix}${name}`);
    const port = `p${++this.portCounter}`;
    const ip = options.ip ?? `10.231.${this.x}.${this.nextHostOctet++}`;
    const mac = options.mac ?? randomMac();
    await run([
      IP,
      'link',
      'add',
      'eth0',
      'netns',
      ns,
      'type',
      'veth',
      'peer',
      'name',
      port,
      'netns',
      this.routerNs,
    ]);
    await this.exec(this.routerNs, [IP, 'link', 'set', port, 'master', 'br0', 'up']);
    await this.exec(ns, [IP, 'link', 'set', 'eth0', 'address', mac]);
    await this.exec(ns, [IP, 'addr', 'add', `${ip}/24`, 'dev', 'eth0']);
    await this.exec(ns, [IP, 'link', 'set', 'eth0', 'up']);
    await this.exec(ns, [IP, 'route', 'add', 'default', 'via', this.gateway]);
    this.ports.set(name, port);
    const host: LanHost = { name, ns, ip, mac };
    this.hosts.set(name, host);
    return host;
  }

  private host(name: string): LanHost {
    const host = this.hosts.get(name);
    if (!host) throw new Error(`no host ${name} on the test LAN`);
    return host;
  }

  async removeHost(name: string): Promise<void> {
    const host = this.host(name);
    for (const child of this.processes) {
      if (child.spawnargs.includes(host.ns)) child.kill('SIGKILL');
    }
    // The bridge port first: deleting a veth end removes both ends before `ip` returns, while
    // `ip netns del` leaves the namespace's teardown (and its answers to ARP) to the kernel, later.
    const port = this.ports.get(name);
    if (port !== undefined) await this.exec(this.routerNs, [IP, 'link', 'del', port]);
    await run([IP, 'netns', 'del', host.ns]);
    this.namespaces.delete(host.ns);
    liveNamespaces.delete(host.ns);
    this.hosts.delete(name);
    this.ports.delete(name);
  }

  async setHostIp(name: string, ip: string): Promise<void> {
    const host = this.host(name);
    await this.exec(host.ns, [IP, 'addr', 'flush', 'dev', 'eth0']);
    await this.exec(host.ns, [IP, 'addr', 'add', `${ip}/24`, 'dev', 'eth0']);
    await this.exec(host.ns, [IP, 'route', 'replace', 'default', 'via', this.gateway]);
    host.ip = ip;
  }

  async addIpv6(target: LanHost | 'root', n: number): Promise<string> {
    const address = canonicalIpv6(`fd00:231:${this.x}::${n.toString(16)}`);
    // nodad: usable at once (duplicate address detection would hold it tentative for a second).
    const argv = [IP, '-6', 'addr', 'add', `${address}/64`, 'dev'];
    const show = [IP, '-6', 'addr', 'show', 'dev'];
    if (target === 'root') await run([...argv, this.lanInterface, 'nodad']);
    else await this.exec(target.ns, [...argv, 'eth0', 'nodad']);
    // The link-local address answers (the all-nodes echo) only once its duplicate address
    // detection is over: wait (bounded) until no address of the interface is tentative.
    for (let attempt = 0; attempt < 50; attempt++) {
      const tentative =
        target === 'root'
          ? await run([...show, this.lanInterface, 'tentative'])
          : await this.exec(target.ns, [...show, 'eth0', 'tentative']);
      if (tentative.trim() === '') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return address;
  }

  async removeIpv4(name: string): Promise<void> {
    const host = this.host(name);
    await this.exec(host.ns, [IP, '-4', 'addr', 'flush', 'dev', 'eth0']);
  }

  async setHostMac(name: string, mac: string): Promise<void> {
    const host = this.host(name);
    await this.exec(host.ns, [IP, 'link', 'set', 'eth0', 'address', mac]);
    host.mac = mac;
  }

  exec(ns: string, argv: readonly string[]): Promise<string> {
    return run([IP, 'netns', 'exec', ns, ...argv]);
  }

  spawn(ns: string, argv: readonly string[]): LanProcess {
    const child = spawn(IP, ['netns', 'exec', ns, ...argv], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.processes.add(child);
    liveProcesses.add(child);
    const lines: string[] = [];
    const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
    createInterface({ input: child.stdout }).on('line', (line) => {
      lines.push(line);
      for (const waiter of [...waiters]) {
        if (waiter.pattern.test(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    });
    const exited = new Promise<void>((resolve) => {
      child.once('close', () => {
        resolve();
      });
    });
    child.once('close', () => {
      this.processes.delete(child);
      liveProcesses.delete(child);
    });
    return {
      child,
      lines,
      waitForLine: (pattern, timeoutMs = 10_000) => {
        const seen = lines.find((line) => pattern.test(line));
        if (seen !== undefined) return Promise.resolve(seen);
        return new Promise((resolve, reject) => {
          const timer = setTimeout(() => {
            reject(
              new Error(`no line matching ${pattern} within ${timeoutMs} ms; got: ${lines.join(' | ')}`),
            );
          }, timeoutMs);
          waiters.push({
            pattern,
            resolve: (line) => {
              clearTimeout(timer);
              resolve(line);
            },
          });
        });
      },
      stop: async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await exited;
      },
    };
  }

  node(ns: string, script: string, args: readonly string[] = []): LanProcess {
    return this.spawn(ns, [process.execPath, '-e', script, ...args]);
  }

  async tcpListener(host: LanHost, ports: readonly number[], banner = ''): Promise<LanProcess> {
    const script = `
      const net = require('node:net');
      const [banner, ...ports] = process.argv.slice(1);
      let open = 0;
      for (const port of ports) {
        net.createServer((s) => { s.on('error', () => {}); if (banner) s.write(banner + '\\r\\n'); s.on('data', () => {}); })
          .listen(Number(port), '0.0.0.0', () => { if (++open === ports.length) console.log('listening'); });
      }`;
    const proc = this.node(host.ns, script, [banner, ...ports.map(String)]);
    await proc.waitForLine(/^listening$/);
    return proc;
  }

  async udpRecorder(host: LanHost, port: number): Promise<LanProcess> {
    const script = `
      const s = require('node:dgram').createSocket('udp4');
      s.on('message', (m, r) => console.log(r.address + ' ' + m.toString('hex')));
      s.bind(Number(process.argv[1]), '0.0.0.0', () => console.log('listening'));`;
    const proc = this.node(host.ns, script, [String(port)]);
    await proc.waitForLine(/^listening$/);
    return proc;
  }

  async rateLimit(host: LanHost, mbit: number): Promise<void> {
    const port = this.ports.get(host.name);
    if (port === undefined) throw new Error(`no link for ${host.name}`);
    // tbf on the egress of both ends: the host's eth0 shapes its uploads (our downloads), the
    // bridge port shapes traffic towards the host.
    const tbf = ['tbf', 'rate', `${mbit}mbit`, 'burst', '64kb', 'latency', '50ms'];
    await this.exec(host.ns, [TC, 'qdisc', 'replace', 'dev', 'eth0', 'root', ...tbf]);
    await this.exec(this.routerNs, [TC, 'qdisc', 'replace', 'dev', port, 'root', ...tbf]);
  }

  async isolatedNamespace(resolvConf?: string): Promise<string> {
    const name = `${this.prefix}iso${randomBytes(2).toString('hex')}`;
    if (resolvConf !== undefined) {
      // `ip netns exec` bind-mounts /etc/netns/<name>/resolv.conf over /etc/resolv.conf.
      mkdirSync(`/etc/netns/${name}`, { recursive: true });
      writeFileSync(`/etc/netns/${name}/resolv.conf`, resolvConf);
    }
    return this.addNamespace(name);
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const child of this.processes) child.kill('SIGKILL');
    for (const ns of this.namespaces) {
      await run([IP, 'netns', 'del', ns]).catch(() => undefined);
      rmSync(`/etc/netns/${ns}`, { recursive: true, force: true });
      liveNamespaces.delete(ns);
    }
    this.namespaces.clear();
    // Deleting the router namespace removed the root veth's peer, hence the veth and its routes;
    // this is a safety net in case the router namespace was never created.
    await run([IP, 'link', 'del', this.lanInterface]).catch(() => undefined);
    releaseBlock(this.x);
  }
}

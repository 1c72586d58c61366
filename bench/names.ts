/**
 * Benchmark of naming (`npm run bench -- names`): one scan cycle that finds 1,000 new devices,
 * with every name source on stand-ins on loopback (bench/names-standins.ts: an mDNS and a NetBIOS
 * responder on each device's own 127.0.x.y address, a DNS server answering PTR, a dnsmasq lease
 * file naming every device), against the same cycle with naming off. Three runs, each on a fresh
 * server (child process, bench/names-server.ts) and database:
 *   off:     NAME_MDNS/NETBIOS/DNS off, no lease file (the cycle without naming)
 *   answer:  every source answers
 *   silent:  the same, but DNS_SERVER never answers (the resolver gives it up after
 *            NAME_CONCURRENCY silences in a row)
 *   no-dhcp: every source but the lease file answers (a device named by its lease is not asked
 *            over mDNS or NetBIOS; without leases all three are asked)
 * Reported: the cycle's durationMs and what naming adds to it, devices named, and the p99 of
 * device GETs (8 clients, back to back) sent while the cycle runs. Targets: naming adds under
 * 300 ms when every source answers, under 2 s with the silent one; GET p99 under 10 ms.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  fakeArpScanMac,
  fakeArpScanSubnet,
  setFakeArpScanCount,
  writeFakeArpScan,
} from '../test/helpers/fake-arp-scan.js';
import { benchToken, cpuMicrosOf, percentile, startChild } from './lib.js';

const newDevices = 1000;
const getTargets = 200;
const headers = { authorization: `Bearer ${benchToken}`, 'content-type': 'application/json' };

interface StandIns {
  readonly mdns: number;
  readonly netbios: number;
  readonly dns: string;
  readonly silentDns: string;
}

async function startStandIns(): Promise<{ ports: StandIns; pid: number; stop: () => void }> {
  const script = fileURLToPath(new URL('./names-standins.js', import.meta.url));
  const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => {
      reject(new Error(`stand-ins exited with ${code}`));
    });
  });
  return {
    ports: JSON.parse(line) as StandIns,
    pid: child.pid ?? 0,
    stop: () => {
      child.kill('SIGTERM');
    },
  };
}

interface RunResult {
  readonly durationMs: number;
  readonly named: number;
  readonly newDevices: number;
  readonly errors: string;
  readonly getP50: number;
  readonly getP99: number;
  readonly gets: number;
  /** CPU time of the server process during the cycle (including the 8 GET clients' requests). */
  readonly serverCpuMs: number;
  /** CPU time of the stand-ins' process during the cycle. */
  readonly standInsCpuMs: number;
}

async function runOnce(
  name: string,
  env: Record<string, string>,
  ports: StandIns,
  standInsPid: number,
): Promise<RunResult> {
  const dataDir = mkdtempSync(join(tmpdir(), `netkeep-bench-names-${name}-`));
  const toolDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-names-tools-'));
  // The loop's first cycle (at start) sees nobody; the measured one then finds set 1: hosts
  // 1,000..1,999 of the fake.
  writeFakeArpScan(toolDir, 0);
  const leaseFile = join(dataDir, 'dhcp.leases');
  writeFileSync(
    leaseFile,
    Array.from({ length: 2 * newDevices }, (_, k) => `0 ${fakeArpScanMac(k)} 127.0.0.1 lease-${k} *\n`).join(
      '',
    ),
  );
  const server = await startChild(fileURLToPath(new URL('./names-server.js', import.meta.url)), {
    DATA_DIR: dataDir,
    API_TOKEN: benchToken,
    LOG_LEVEL: 'warn',
    TOOL_PATH: toolDir,
    SCAN_TOOL: 'arp-scan',
    SCAN_SUBNETS: fakeArpScanSubnet,
    SCAN_INTERVAL: '86400',
    BENCH_MDNS_PORT: String(ports.mdns),
    BENCH_NETBIOS_PORT: String(ports.netbios),
    DHCP_LEASES: `dnsmasq:${leaseFile}`,
    ...env,
  });
  try {
    for (;;) {
      const status = (await (await fetch(`${server.url}/nettools/scan`, { headers })).json()) as {
        lastCycle: unknown;
      };
      if (status.lastCycle !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // Devices for the GETs (not on the scanned LAN).
    for (let i = 0; i < getTargets; i++) {
      const res = await fetch(
        `${server.url}/device/02:ff:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}`,
        {
          method: 'POST',
          headers,
          body: JSON.stringify({ createNew: true, devName: `target ${i}` }),
        },
      );
      await res.arrayBuffer();
    }
    setFakeArpScanCount(toolDir, newDevices);
    // Read through a function: the clients' loops must see the change made after the cycle.
    const state = { running: true };
    const running = (): boolean => state.running;
    const samples: number[] = [];
    const client = async (c: number): Promise<void> => {
      let i = c;
      while (running()) {
        const t = performance.now();
        const res = await fetch(
          `${server.url}/device/02:ff:00:00:00:${((i += 8) % getTargets).toString(16).padStart(2, '0')}`,
          { headers },
        );
        await res.arrayBuffer();
        if (running()) samples.push(performance.now() - t);
      }
    };
    const serverPid = server.process.pid ?? 0;
    const cpuBefore = [cpuMicrosOf(serverPid), cpuMicrosOf(standInsPid)];
    const clients = Array.from({ length: 8 }, (_, c) => client(c));
    const res = await fetch(`${server.url}/nettools/scan`, { method: 'POST', headers });
    const body = (await res.json()) as {
      lastCycle?: {
        durationMs: number;
        named: number;
        newDevices: number;
        nameSourceErrors: { message: string }[];
      };
      message?: string;
    };
    const cpuAfter = [cpuMicrosOf(serverPid), cpuMicrosOf(standInsPid)];
    state.running = false;
    await Promise.all(clients);
    const cycle = body.lastCycle;
    if (cycle === undefined) throw new Error(`the cycle failed: ${body.message ?? res.status}`);
    return {
      durationMs: cycle.durationMs,
      named: cycle.named,
      newDevices: cycle.newDevices,
      errors: cycle.nameSourceErrors.map((e) => e.message).join('; '),
      getP50: Math.round(percentile(samples, 50) * 10) / 10,
      getP99: Math.round(percentile(samples, 99) * 10) / 10,
      gets: samples.length,
      serverCpuMs: Math.round(((cpuAfter[0] ?? 0) - (cpuBefore[0] ?? 0)) / 1000),
      standInsCpuMs: Math.round(((cpuAfter[1] ?? 0) - (cpuBefore[1] ?? 0)) / 1000),
    };
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(toolDir, { recursive: true, force: true });
  }
}

export async function run(): Promise<void> {
  const standIns = await startStandIns();
  try {
    const { ports } = standIns;
    const on = { NAME_MDNS: 'on', NAME_NETBIOS: 'on', NAME_DNS: 'on' };
    const runs: [string, Record<string, string>][] = [
      [
        'off',
        { NAME_MDNS: 'off', NAME_NETBIOS: 'off', NAME_DNS: 'off', DHCP_LEASES: '', DNS_SERVER: ports.dns },
      ],
      ['answer', { ...on, DNS_SERVER: ports.dns }],
      ['silent', { ...on, DNS_SERVER: ports.silentDns }],
      // Without leases every device is asked over mDNS, NetBIOS and DNS: 3,000 questions.
      ['no-dhcp', { ...on, DNS_SERVER: ports.dns, DHCP_LEASES: '' }],
    ];
    const results: Record<string, RunResult> = {};
    console.log(
      `load average before: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} (${cpus().length} cores)`,
    );
    console.log(
      'run      new   named  cycle ms  naming adds ms  server CPU ms  stand-ins CPU ms  GET p50 ms  GET p99 ms  GETs  source errors',
    );
    for (const [name, env] of runs) {
      const r = await runOnce(name, env, ports, standIns.pid);
      results[name] = r;
      const adds = name === 'off' ? '-' : String(r.durationMs - (results.off?.durationMs ?? 0));
      console.log(
        `${name.padEnd(8)} ${String(r.newDevices).padStart(4)} ${String(r.named).padStart(7)} ${String(r.durationMs).padStart(9)} ${adds.padStart(15)} ${String(r.serverCpuMs).padStart(14)} ${String(r.standInsCpuMs).padStart(17)} ${String(r.getP50).padStart(11)} ${String(r.getP99).padStart(11)} ${String(r.gets).padStart(5)}  ${r.errors}`,
      );
    }
    console.log(
      `load average after: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    standIns.stop();
  }
}

/**
 * Helpers every bench module shares: a free loopback port, a child process that serves HTTP and is
 * waited on through a URL, an autocannon run with a uniform result, one printed row per run, and
 * the RSS of a process. Benchmarks only ever talk to 127.0.0.1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import autocannon, { type Request } from 'autocannon';

/**
 * The stores a bench runs on: SQLite, and PostgreSQL too with `--store postgres` on the command line
 * (`npm run bench -- devices --store postgres`; the bench starts its own PostgreSQL).
 */
export function benchStores(argv: readonly string[] = process.argv): ('sqlite' | 'postgres')[] {
  const at = argv.indexOf('--store');
  return at >= 0 && argv[at + 1] === 'postgres' ? ['sqlite', 'postgres'] : ['sqlite'];
}

export const benchToken = 'bench-token-0123456789abcdef0123456789';

/** A TCP port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => {
        resolve(port);
      });
    });
  });
}

export interface ChildServer {
  readonly url: string;
  readonly process: ChildProcess;
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
}

/**
 * Starts `node [nodeFlags] <script>` with `env` (plus PORT/HOST on a free loopback port) and resolves once
 * `readyPath` answers 200. Output goes to /dev/null so that the parent, which runs the load
 * generator, spends no time reading logs.
 */
export async function startChild(
  script: string,
  env: Record<string, string>,
  readyPath = '/health',
  nodeFlags: readonly string[] = [],
): Promise<ChildServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeFlags, script], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      resolve();
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`);
    try {
      const res = await fetch(`${url}${readyPath}`);
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${script} did not become ready`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url,
    process: child,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

export interface LoadOptions {
  readonly url: string;
  /** Default 32. */
  readonly connections?: number;
  /** Seconds; default 5. Ignored when `amount` is given. */
  readonly duration?: number;
  /** Send exactly this many requests instead of running for `duration`. */
  readonly amount?: number;
  readonly method?: string;
  readonly headers?: Record<string, string>;
  /** Called per request: the path (and method, headers, body) to send, so each request can differ. */
  readonly next: () => { path: string; method?: string; headers?: Record<string, string>; body?: string };
}

export interface LoadResult {
  readonly requestsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly total: number;
  readonly errors: number;
  readonly non2xx: number;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const request: Request = {
    method: options.method ?? 'GET',
    setupRequest: (spec) => {
      const next = options.next();
      return { ...spec, ...next, headers: { ...spec.headers, ...next.headers } };
    },
  };
  const result = await autocannon({
    url: options.url,
    connections: options.connections ?? 32,
    ...(options.amount === undefined ? { duration: options.duration ?? 5 } : { amount: options.amount }),
    headers: options.headers,
    requests: [request],
  });
  return {
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    total: result.requests.total,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

/** The middle value (the upper one of an even count); NaN for no values. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** The value at `p` percent of the sorted samples (nearest rank, no interpolation); 0 for none. */
export function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** Reads the `<key>: <n> kB` lines of a /proc file (status, smaps_rollup); 0 for a missing key. */
function kibFieldsOf(text: string): (key: string) => number {
  return (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
}

/** VmRSS and VmHWM (peak) of a process in MiB, from /proc. */
export function memoryOf(pid: number): { rssMiB: number; peakMiB: number } {
  const kib = kibFieldsOf(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 };
}

/** RSS, proportional (PSS) and private memory of a process in MiB, as text (smaps_rollup). */
export function sharedMemoryOf(pid: number): string {
  const kib = kibFieldsOf(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  const mib = (value: number): string => (value / 1024).toFixed(1);
  return `RSS ${mib(kib('Rss'))} MiB, PSS ${mib(kib('Pss'))} MiB, private ${mib(kib('Private_Clean') + kib('Private_Dirty'))} MiB`;
}

/**
 * CPU time (user + system, all threads) a process has used so far, in microseconds, from
 * /proc/<pid>/stat (clock ticks of 1/100 s: read it around runs of seconds, not single requests).
 */
export function cpuMicrosOf(pid: number): number {
  // The command name (field 2) is in parentheses and may hold spaces and parentheses: count fields
  // after the last ')'. utime and stime are fields 14 and 15, in clock ticks (USER_HZ, 100 on
  // Linux on every architecture netkeep runs on).
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

export function printHeader(): void {
  console.log('| benchmark | req/s | p50 ms | p99 ms | requests | errors | non-2xx |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
}

export function printRow(name: string, r: LoadResult): void {
  console.log(
    `| ${name} | ${Math.round(r.requestsPerSecond)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.total} | ${r.errors} | ${r.non2xx} |`,
  );
}

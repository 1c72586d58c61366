/**
 * Internet speed test with two backends:
 *   speedtest-cli  the Debian tool, `speedtest-cli --secure --simple`, through the tool runner;
 *   builtin        HTTP against SPEEDTEST_SERVER_URL (Cloudflare's speed endpoints: GET
 *                  /__down?bytes=N, POST /__up): latency, then download and upload with
 *                  SPEEDTEST_STREAMS parallel streams for SPEEDTEST_DURATION_MS each. Bodies are
 *                  streamed (counted, never buffered) so the test is not CPU-bound.
 * `auto` uses speedtest-cli when installed, else builtin. Only one test runs at a time: a request
 * that arrives while one runs waits for it and gets the same result.
 */
import http from 'node:http';
import https from 'node:https';
import { ApiError } from '../http/errors.js';
import type { ToolRunner } from './runner.js';

export type SpeedtestBackend = 'auto' | 'speedtest-cli' | 'builtin';

export interface SpeedtestOptions {
  readonly backend: SpeedtestBackend;
  readonly serverUrl: string;
  readonly streams: number;
  readonly durationMs: number;
  readonly timeoutMs: number;
}

export interface SpeedtestNumbers {
  pingMs: number;
  downloadMbps: number;
  uploadMbps: number;
}

export interface SpeedtestResult {
  success: true;
  output: string[];
  result: SpeedtestNumbers;
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

/** The three lines of the answer. */
export function formatSpeedtest(numbers: SpeedtestNumbers): string[] {
  return [
    `Ping: ${numbers.pingMs} ms`,
    `Download: ${numbers.downloadMbps} Mbit/s`,
    `Upload: ${numbers.uploadMbps} Mbit/s`,
  ];
}

/** Parses `speedtest-cli --simple` output (Ping/Download/Upload lines). */
export function parseSpeedtestCli(stdout: string): SpeedtestNumbers | null {
  const ping = /^Ping:\s*([0-9.]+)\s*ms/m.exec(stdout)?.[1];
  const down = /^Download:\s*([0-9.]+)\s*Mbit\/s/m.exec(stdout)?.[1];
  const up = /^Upload:\s*([0-9.]+)\s*Mbit\/s/m.exec(stdout)?.[1];
  if (ping === undefined || down === undefined || up === undefined) return null;
  return { pingMs: Number(ping), downloadMbps: Number(down), uploadMbps: Number(up) };
}

/** Runs (or joins) a speed test. */
export class Speedtest {
  private current: Promise<SpeedtestResult> | undefined;

  constructor(
    private readonly runner: ToolRunner,
    private readonly options: SpeedtestOptions,
  ) {}

  /** The result of the running test, or of a new one when none runs. */
  run(): Promise<SpeedtestResult> {
    if (this.current) return this.current;
    const test = this.start().finally(() => {
      this.current = undefined;
    });
    this.current = test;
    return test;
  }

  private async start(): Promise<SpeedtestResult> {
    const { backend } = this.options;
    const useCli =
      backend === 'speedtest-cli' || (backend === 'auto' && this.runner.isInstalled('speedtest-cli'));
    const numbers = useCli ? await this.runCli() : await runBuiltin(this.options);
    return { success: true, output: formatSpeedtest(numbers), result: numbers };
  }

  private async runCli(): Promise<SpeedtestNumbers> {
    // No AbortSignal: other requests may be waiting for the same test, so one client leaving
    // must not stop it; SPEEDTEST_TIMEOUT_MS bounds it.
    const result = await this.runner.run({
      tool: 'speedtest-cli',
      args: ['--secure', '--simple'],
      timeoutMs: this.options.timeoutMs,
    });
    const numbers = parseSpeedtestCli(result.stdout);
    if (numbers === null) {
      throw new ApiError(
        500,
        'Command failed',
        'speedtest-cli did not print the Ping, Download and Upload lines.',
        result.stdout.slice(-2048) || undefined,
      );
    }
    return numbers;
  }
}

/** Bytes requested per download request / sent per upload request: bounds of the adaptive size. */
const minChunk = 256 * 1024;
const maxChunk = 64 * 1024 * 1024;
/** A request that finishes faster than this doubles the next one's size. */
const targetRequestMs = 250;
const pingSamples = 5;

interface Target {
  readonly base: URL;
  readonly agent: http.Agent;
  readonly request: typeof http.request;
}

async function runBuiltin(options: SpeedtestOptions): Promise<SpeedtestNumbers> {
  let base: URL;
  try {
    base = new URL(options.serverUrl);
  } catch {
    throw new ApiError(500, 'Configuration error', 'SPEEDTEST_SERVER_URL is not a URL.');
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new ApiError(500, 'Configuration error', 'SPEEDTEST_SERVER_URL must be an http or https URL.');
  }
  const secure = base.protocol === 'https:';
  const agent = secure
    ? new https.Agent({ keepAlive: true, maxSockets: options.streams + 1 })
    : new http.Agent({ keepAlive: true, maxSockets: options.streams + 1 });
  const target: Target = { base, agent, request: secure ? https.request : http.request };
  const overall = AbortSignal.timeout(options.timeoutMs);
  try {
    const pingMs = await measurePing(target, overall);
    const downloadMbps = await measurePhase(options, overall, (deadline, signal) =>
      downloadStream(target, deadline, signal),
    );
    // A phase cut short by the time limit ends quietly with what it measured: the limit must still
    // be the answer (504), not a result with the missing phases as 0.
    overall.throwIfAborted();
    const uploadMbps = await measurePhase(options, overall, (deadline, signal) =>
      uploadStream(target, deadline, signal),
    );
    overall.throwIfAborted();
    return { pingMs: round2(pingMs), downloadMbps: round2(downloadMbps), uploadMbps: round2(uploadMbps) };
  } catch (err) {
    if (err instanceof ApiError) throw err;
    if (overall.aborted) {
      throw new ApiError(
        504,
        'Tool timed out',
        `The speed test did not finish within ${options.timeoutMs} ms.`,
      );
    }
    throw new ApiError(
      500,
      'Command failed',
      `The speed test against ${base.origin} failed.`,
      err instanceof Error ? err.message : String(err),
    );
  } finally {
    agent.destroy();
  }
}

/** One stream's measurement: bytes moved and over how long. */
interface StreamMeasure {
  bytes: number;
  ms: number;
}

/** Runs `streams` streams until the phase deadline; the sum of the per-stream rates, in Mbit/s. */
async function measurePhase(
  options: SpeedtestOptions,
  overall: AbortSignal,
  stream: (deadline: number, signal: AbortSignal) => Promise<StreamMeasure>,
): Promise<number> {
  const deadline = performance.now() + options.durationMs;
  const controller = new AbortController();
  const signal = AbortSignal.any([overall, controller.signal]);
  const timer = setTimeout(() => {
    controller.abort();
  }, options.durationMs);
  try {
    const measures = await Promise.all(
      Array.from({ length: options.streams }, () => stream(deadline, signal)),
    );
    return measures.reduce((sum, m) => sum + (m.ms > 0 ? (m.bytes * 8) / (m.ms * 1000) : 0), 0);
  } finally {
    clearTimeout(timer);
  }
}

function requestOptions(target: Target, method: string, path: string): http.RequestOptions {
  const url = new URL(path, target.base);
  return {
    method,
    protocol: url.protocol,
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port,
    path: `${url.pathname}${url.search}`,
    agent: target.agent,
  };
}

/** Median time to the response headers of a zero-byte download, after one warm-up request. */
async function measurePing(target: Target, signal: AbortSignal): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i <= pingSamples; i++) {
    const started = performance.now();
    await new Promise<void>((resolve, reject) => {
      const req = target.request(requestOptions(target, 'GET', '/__down?bytes=0'), (res) => {
        const elapsed = performance.now() - started;
        res.resume();
        res.once('end', () => {
          if (res.statusCode !== 200) reject(new Error(`GET /__down answered HTTP ${res.statusCode}`));
          else {
            if (i > 0) samples.push(elapsed); // the first one opened the connection
            resolve();
          }
        });
        res.once('error', reject);
      });
      req.once('error', reject);
      abortOn(signal, req);
      req.end();
    });
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] ?? 0;
}

function abortOn(signal: AbortSignal, req: http.ClientRequest): void {
  if (signal.aborted) {
    req.destroy(new Error('aborted'));
    return;
  }
  const onAbort = (): void => {
    req.destroy(new Error('aborted'));
  };
  signal.addEventListener('abort', onAbort, { once: true });
  req.once('close', () => {
    signal.removeEventListener('abort', onAbort);
  });
}

/**
 * Downloads back to back until the deadline, counting every byte as it arrives; a request cut by
 * the deadline still counts what it delivered.
 */
async function downloadStream(target: Target, deadline: number, signal: AbortSignal): Promise<StreamMeasure> {
  const started = performance.now();
  let bytes = 0;
  let chunk = minChunk;
  while (performance.now() < deadline && !signal.aborted) {
    const requestStart = performance.now();
    const completed = await new Promise<boolean>((resolve, reject) => {
      const req = target.request(requestOptions(target, 'GET', `/__down?bytes=${chunk}`), (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`GET /__down answered HTTP ${res.statusCode}`));
          return;
        }
        res.on('data', (data: Buffer) => {
          if (performance.now() <= deadline) bytes += data.length;
        });
        res.once('end', () => {
          resolve(true);
        });
        res.once('error', () => {
          resolve(false);
        });
      });
      req.once('error', (err) => {
        if (signal.aborted) resolve(false);
        else reject(err);
      });
      abortOn(signal, req);
      req.end();
    });
    if (completed && performance.now() - requestStart < targetRequestMs)
      chunk = Math.min(chunk * 2, maxChunk);
  }
  return { bytes, ms: Math.min(performance.now(), deadline) - started };
}

/** A reusable block of upload data: the same bytes are written again and again, never copied. */
const uploadBlock = Buffer.alloc(64 * 1024, 0x5a);

/**
 * Uploads back to back until the deadline. Only requests the server confirmed count (bytes written
 * to a socket may still sit in kernel buffers), and the stream's time runs to its last confirmed
 * request, so a request cut by the deadline neither inflates nor dilutes the rate.
 */
async function uploadStream(target: Target, deadline: number, signal: AbortSignal): Promise<StreamMeasure> {
  const started = performance.now();
  let bytes = 0;
  let lastConfirmed = started;
  let chunk = minChunk;
  while (performance.now() < deadline && !signal.aborted) {
    const requestStart = performance.now();
    const size = chunk;
    const completed = await new Promise<boolean>((resolve, reject) => {
      const options = requestOptions(target, 'POST', '/__up');
      options.headers = { 'content-type': 'application/octet-stream', 'content-length': String(size) };
      const req = target.request(options, (res) => {
        res.resume();
        res.once('end', () => {
          if (res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300) resolve(true);
          else reject(new Error(`POST /__up answered HTTP ${res.statusCode}`));
        });
        res.once('error', () => {
          resolve(false);
        });
      });
      req.once('error', (err) => {
        if (signal.aborted) resolve(false);
        else reject(err);
      });
      abortOn(signal, req);
      let remaining = size;
      const write = (): void => {
        while (remaining > 0) {
          const piece = remaining >= uploadBlock.length ? uploadBlock : uploadBlock.subarray(0, remaining);
          remaining -= piece.length;
          if (!req.write(piece)) {
            req.once('drain', write);
            return;
          }
        }
        req.end();
      };
      write();
    });
    if (!completed) break;
    const now = performance.now();
    if (now <= deadline) {
      bytes += size;
      lastConfirmed = now;
    }
    if (now - requestStart < targetRequestMs) chunk = Math.min(chunk * 2, maxChunk);
  }
  return { bytes, ms: lastConfirmed - started };
}

/**
 * The builtin speed-test backend: HTTP against SPEEDTEST_SERVER_URL (Cloudflare's speed endpoints:
 * GET /__down?bytes=N, POST /__up): latency, then download and upload with SPEEDTEST_STREAMS
 * parallel streams for SPEEDTEST_DURATION_MS each. Bodies are streamed (counted, never buffered)
 * so the test is not CPU-bound. Each phase is reported as it ends (live progress).
 */
import http from 'node:http';
import https from 'node:https';
import { DomainError } from '../errors.js';
import type { SpeedtestNumbers, SpeedtestOptions, SpeedtestProgressListener } from './speedtest.js';

function round2(value: number): number {
  return Math.round(value * 100) / 100;
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

/** Runs the builtin test against `options.serverUrl`: ping, then download, then upload. */
export async function runBuiltin(
  options: SpeedtestOptions,
  report: SpeedtestProgressListener,
): Promise<SpeedtestNumbers> {
  const base = options.serverUrl;
  const secure = base.protocol === 'https:';
  const agent = secure
    ? new https.Agent({ keepAlive: true, maxSockets: options.streams + 1 })
    : new http.Agent({ keepAlive: true, maxSockets: options.streams + 1 });
  const target: Target = { base, agent, request: secure ? https.request : http.request };
  const overall = AbortSignal.timeout(options.timeoutMs);
  try {
    const pingMs = round2(await measurePing(target, overall));
    report({ phase: 'latency', pingMs });
    const downloadMbps = round2(
      await measurePhase(options, overall, (deadline, signal) => downloadStream(target, deadline, signal)),
    );
    report({ phase: 'download', mbps: downloadMbps });
    // A phase cut short by the time limit ends quietly with what it measured: the limit must still
    // be the answer (504), not a result with the missing phases as 0.
    overall.throwIfAborted();
    const uploadMbps = round2(
      await measurePhase(options, overall, (deadline, signal) => uploadStream(target, deadline, signal)),
    );
    overall.throwIfAborted();
    report({ phase: 'upload', mbps: uploadMbps });
    return { pingMs, downloadMbps, uploadMbps };
  } catch (err) {
    if (overall.aborted) {
      throw new DomainError('timeout', `The speed test did not finish within ${options.timeoutMs} ms.`, {
        code: 'SPEEDTEST_TIMEOUT',
        reason: 'Tool timed out',
      });
    }
    throw new DomainError('command-failed', `The speed test against ${base.origin} failed.`, {
      code: 'SPEEDTEST_FAILED',
      reason: 'Command failed',
      details: err instanceof Error ? err.message : String(err),
    });
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

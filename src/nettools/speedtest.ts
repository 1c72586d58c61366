/**
 * Internet speed test with two backends:
 *   speedtest-cli  the Debian tool, `speedtest-cli --secure`, through the tool runner; its output
 *                  (flushed line by line) says each phase as it ends: "Hosted by ...: <ping> ms",
 *                  "Download: <n> Mbit/s", "Upload: <n> Mbit/s" (--simple would print nothing until
 *                  the end, so there would be no progress to follow);
 *   builtin        HTTP against SPEEDTEST_SERVER_URL (speedtest-builtin.ts), reporting each phase.
 * `auto` uses speedtest-cli when installed, else builtin. Only one test runs at a time: a request
 * that arrives while one runs waits for it and gets the same result, and the same progress (the
 * phases already finished at once, the others as they finish).
 */
import { DomainError } from '../errors.js';
import type { ToolRunner } from './runner.js';
import { runBuiltin } from './speedtest-builtin.js';

export type SpeedtestBackend = 'auto' | 'speedtest-cli' | 'builtin';

export interface SpeedtestOptions {
  readonly backend: SpeedtestBackend;
  /** SPEEDTEST_SERVER_URL, an http or https URL (checked at start). */
  readonly serverUrl: URL;
  readonly streams: number;
  readonly durationMs: number;
  readonly timeoutMs: number;
}

export interface SpeedtestNumbers {
  pingMs: number;
  downloadMbps: number;
  uploadMbps: number;
}

/** A finished phase of a test: latency first, then download and upload. */
export type SpeedtestProgress =
  | { readonly phase: 'latency'; readonly pingMs: number }
  | { readonly phase: 'download' | 'upload'; readonly mbps: number };

export type SpeedtestProgressListener = (progress: SpeedtestProgress) => void;

export interface SpeedtestResult {
  success: true;
  output: string[];
  result: SpeedtestNumbers;
}

/** The three lines of the answer. */
export function formatSpeedtest(numbers: SpeedtestNumbers): string[] {
  return [
    `Ping: ${numbers.pingMs} ms`,
    `Download: ${numbers.downloadMbps} Mbit/s`,
    `Upload: ${numbers.uploadMbps} Mbit/s`,
  ];
}

/**
 * The phase one line of `speedtest-cli` output reports, or null. Ping: "Hosted by <sponsor>
 * (<name>) [<d> km]: <ping> ms" (or --simple's "Ping: <ping> ms"); download and upload:
 * "Download: <n> Mbit/s" after the progress dots of that phase.
 */
export function speedtestCliPhase(line: string): SpeedtestProgress | null {
  const ping = /^(?:Hosted by .*|Ping):\s*([0-9.]+)\s*ms$/.exec(line)?.[1];
  if (ping !== undefined) return { phase: 'latency', pingMs: Number(ping) };
  const rate = /(Download|Upload):\s*([0-9.]+)\s*Mbit\/s$/.exec(line);
  if (rate?.[1] !== undefined && rate[2] !== undefined)
    return { phase: rate[1] === 'Download' ? 'download' : 'upload', mbps: Number(rate[2]) };
  return null;
}

/** The numbers of `speedtest-cli` output (with or without --simple), or null when one is missing. */
export function parseSpeedtestCli(stdout: string): SpeedtestNumbers | null {
  const numbers: Partial<SpeedtestNumbers> = {};
  for (const line of stdout.split('\n')) {
    const phase = speedtestCliPhase(line.trim());
    if (phase?.phase === 'latency') numbers.pingMs = phase.pingMs;
    else if (phase?.phase === 'download') numbers.downloadMbps = phase.mbps;
    else if (phase?.phase === 'upload') numbers.uploadMbps = phase.mbps;
  }
  const { pingMs, downloadMbps, uploadMbps } = numbers;
  if (pingMs === undefined || downloadMbps === undefined || uploadMbps === undefined) return null;
  return { pingMs, downloadMbps, uploadMbps };
}

/** The running test: its result, the phases it has finished, and who follows its progress. */
interface RunningTest {
  readonly result: Promise<SpeedtestResult>;
  readonly finished: SpeedtestProgress[];
  readonly listeners: Set<SpeedtestProgressListener>;
}

/** Runs (or joins) a speed test. */
export class Speedtest {
  private current: RunningTest | undefined;

  constructor(
    private readonly runner: ToolRunner,
    private readonly options: SpeedtestOptions,
  ) {}

  /**
   * The result of the running test, or of a new one when none runs. `onProgress` hears each phase
   * of that test as it finishes (those already finished at once) until the test ends.
   */
  run(onProgress?: SpeedtestProgressListener): Promise<SpeedtestResult> {
    let test = this.current;
    if (test === undefined) {
      const finished: SpeedtestProgress[] = [];
      const listeners = new Set<SpeedtestProgressListener>();
      const report = (progress: SpeedtestProgress): void => {
        finished.push(progress);
        for (const listener of listeners) {
          try {
            listener(progress);
          } catch {
            // One follower failing must not stop the test the others wait for.
          }
        }
      };
      const result = this.start(report).finally(() => {
        this.current = undefined;
        listeners.clear();
      });
      test = { result, finished, listeners };
      this.current = test;
    }
    if (onProgress !== undefined) {
      for (const progress of test.finished) onProgress(progress);
      test.listeners.add(onProgress);
    }
    return test.result;
  }

  private async start(report: SpeedtestProgressListener): Promise<SpeedtestResult> {
    const { backend } = this.options;
    const useCli =
      backend === 'speedtest-cli' || (backend === 'auto' && this.runner.isInstalled('speedtest-cli'));
    const numbers = useCli ? await this.runCli(report) : await runBuiltin(this.options, report);
    return { success: true, output: formatSpeedtest(numbers), result: numbers };
  }

  private async runCli(report: SpeedtestProgressListener): Promise<SpeedtestNumbers> {
    // No AbortSignal: other requests may be waiting for the same test, so one client leaving
    // must not stop it; SPEEDTEST_TIMEOUT_MS bounds it.
    const result = await this.runner.run({
      tool: 'speedtest-cli',
      args: ['--secure'],
      timeoutMs: this.options.timeoutMs,
      onLine: (line) => {
        const phase = speedtestCliPhase(line.trim());
        if (phase !== null) report(phase);
      },
    });
    const numbers = parseSpeedtestCli(result.stdout);
    if (numbers === null) {
      throw new DomainError(
        'command-failed',
        'speedtest-cli did not print the Ping, Download and Upload lines.',
        {
          code: 'SPEEDTEST_OUTPUT_UNREADABLE',
          reason: 'Command failed',
          details: result.stdout.slice(-2048) || undefined,
        },
      );
    }
    return numbers;
  }
}

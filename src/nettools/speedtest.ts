/**
 * Internet speed test with two backends:
 *   speedtest-cli  the Debian tool, `speedtest-cli --secure --simple`, through the tool runner;
 *   builtin        HTTP against SPEEDTEST_SERVER_URL (speedtest-builtin.ts).
 * `auto` uses speedtest-cli when installed, else builtin. Only one test runs at a time: a request
 * that arrives while one runs waits for it and gets the same result.
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

/**
 * THE tool runner: every OS command netkeep starts (nmap, traceroute, nslookup, speedtest-cli,
 * arp-scan, ping, ip) goes through `ToolRunner.run`. It owns the safety rules of running a command so that
 * no tool module can forget one:
 *
 * - binaries are resolved once, at construction, by searching TOOL_PATH; a missing one is a
 *   `tool-missing` outcome naming the Debian package to install;
 * - `spawn` with an argument array, never a shell, and an environment of only LC_ALL=C and PATH;
 * - each command in its own process group (`detached`), so a timeout, an abort or `killAll()` can
 *   kill the command together with every child it forked (SIGTERM, then SIGKILL after a grace);
 * - each command registered with the tool watchdog (watchdog.ts), a small process that kills it
 *   when the server dies, even when the server is killed with no chance to stop it; what escapes
 *   that is removed at the next start (orphans.ts, through NETKEEP_OWNER in its environment);
 * - a time limit (`timeout`), a stdout cap (`command-failed`, "Output too large"), an AbortSignal
 *   (client gone: `aborted`);
 * - optionally a report on file descriptor 3 (nmap's `-oX /dev/fd/3`), in a file that has no name;
 * - a global concurrency limit with a short queue; beyond it `saturated` with a retry delay;
 *
 * Failures are DomainErrors (src/errors.ts); the HTTP layer maps them to statuses.
 * - one structured log line per run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  accessSync,
  closeSync,
  constants,
  fstatSync,
  openSync,
  readSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { DomainError } from '../errors.js';
import { nmapTempPrefix, ownerTag, ownerVariable } from './orphans.js';
import { Watchdog } from './watchdog.js';

/** The Debian package that provides each command, named when a tool is missing. */
export const toolPackages = {
  nmap: 'nmap',
  traceroute: 'traceroute',
  nslookup: 'dnsutils',
  'speedtest-cli': 'speedtest-cli',
  'arp-scan': 'arp-scan',
  // Presence scanning's IPv6 neighbours (SCAN_IPV6): the all-nodes echo and the neighbour table;
  // the security watch reads the kernel's routes (`ip -j route`).
  ping: 'iputils-ping',
  ip: 'iproute2',
} as const;

export type ToolName = keyof typeof toolPackages;

export interface ToolRunnerOptions {
  /** Colon-separated directories searched once for the binaries (TOOL_PATH); also the child's PATH. */
  readonly toolPath: string;
  /** Commands that may run at once (TOOL_CONCURRENCY). */
  readonly concurrency: number;
  /** Requests that may wait for a slot (TOOL_QUEUE); beyond it run() is refused as saturated. */
  readonly queue: number;
  /** Default stdout cap in bytes (TOOL_OUTPUT_LIMIT). */
  readonly outputLimit: number;
  readonly logger: Logger;
  /** Time between SIGTERM and SIGKILL of a group being stopped. Default 2000 ms. */
  readonly killGraceMs?: number;
  /** Seconds after which a refused (saturated) request may retry. Default 5. */
  readonly retryAfterSeconds?: number;
  /**
   * Told the outcome of every run (metrics): how a started command ended, or `not-installed` /
   * `saturated` for a run refused before it started.
   */
  readonly onOutcome?: (tool: ToolName, outcome: RunOutcome | 'not-installed' | 'saturated') => void;
}

export interface RunOptions {
  readonly tool: ToolName;
  /** Arguments, built only from validated values. Never passed through a shell. */
  readonly args: readonly string[];
  /** Time limit of the command (a `timeout` outcome after it). */
  readonly timeoutMs: number;
  /** Aborting (e.g. client disconnected) stops the command or takes it out of the queue. */
  readonly signal?: AbortSignal;
  /** Stdout cap in bytes for this run; default the runner's outputLimit. */
  readonly outputLimit?: number;
  /**
   * Resolve with the result instead of failing (`command-failed`) when the exit code is not 0, for tools whose
   * non-zero exits can be results (nslookup's NXDOMAIN). The caller then decides.
   */
  readonly allowNonZeroExit?: boolean;
  /**
   * The command writes a report to file descriptor 3, e.g. nmap with `-oX /dev/fd/3`, read into
   * `RunResult.report` after it exits. More than `reportLimitFactor` times the output cap is an
   * "Output too large" failure. See `openReportFile` for why a file and not a pipe.
   */
  readonly report?: boolean;
  /**
   * Called with each complete stdout line as it arrives (without its newline; a last line without
   * one at exit), for live progress. Only lines within the output cap are handed out.
   */
  readonly onLine?: (line: string) => void;
  /**
   * A scheduled background scan (the security watch's): one at a time (`backgroundSlots`), and
   * only while a slot stays free for requests (below TOOL_CONCURRENCY - 1 running, at least one);
   * it waits in its own unbounded line behind every request, is never refused as saturated, and
   * runs at the lowest CPU priority (`backgroundNice`).
   */
  readonly background?: boolean;
}

export interface RunResult {
  readonly stdout: string;
  readonly stderr: string;
  /** What the command wrote to file descriptor 3 when `report` was asked for; '' otherwise. */
  readonly report: string;
  readonly exitCode: number;
  readonly durationMs: number;
}

/**
 * Background runs at once, whatever TOOL_CONCURRENCY is. Three nmap processes of a port watch at
 * full speed beside the API on 2 cores made GET p99 15-30 ms; one made it 1-5 ms, for a watch of
 * 200 devices taking a few seconds instead of one (docs/benchmarks.md, watch).
 */
export const backgroundSlots = 1;

/**
 * The nice value of background commands (the lowest priority): the server and the commands
 * people asked for get the CPU first. Set right after the spawn (Node has no spawn option for it
 * and a `nice` wrapper would mean one more exec); an unprivileged server may raise its children's
 * nice value, so this never fails for lack of rights.
 */
export const backgroundNice = 19;

/** Bytes of stderr kept (and returned as `details`): the tail is what explains a failure. */
const stderrKeep = 2048;

/**
 * A report (fd 3) may be this many times the stdout cap: nmap's XML of a host is several times its
 * text. (Earlier versions read nmap's XML back whole, with no cap at all.)
 */
export const reportLimitFactor = 16;

export type RunOutcome =
  'ok' | 'exit-nonzero' | 'timeout' | 'output-too-large' | 'aborted' | 'shutdown' | 'spawn-error';

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
}

/** The tail of a text, at most `limit` characters, starting at a line boundary when possible. */
export function tail(text: string, limit = stderrKeep): string {
  const trimmed = text.trimEnd();
  if (trimmed.length <= limit) return trimmed;
  const cut = trimmed.slice(-limit);
  const newline = cut.indexOf('\n');
  return newline >= 0 && newline < cut.length - 1 ? cut.slice(newline + 1) : cut;
}

export class ToolRunner {
  private readonly paths = new Map<ToolName, string>();
  private readonly running = new Set<ChildProcess>();
  private readonly waiting: Waiter[] = [];
  private readonly backgroundWaiting: Waiter[] = [];
  private active = 0;
  /** Of `active`, the background runs. */
  private backgroundActive = 0;
  private shuttingDown = false;
  private readonly killGraceMs: number;
  private readonly retryAfterSeconds: number;
  /** Kills the running commands if this server dies (kill -9 included). */
  private readonly watchdog: Watchdog;

  constructor(private readonly options: ToolRunnerOptions) {
    this.killGraceMs = options.killGraceMs ?? 2000;
    this.retryAfterSeconds = options.retryAfterSeconds ?? 5;
    for (const tool of Object.keys(toolPackages) as ToolName[]) {
      const found = findExecutable(tool, options.toolPath);
      if (found !== undefined) this.paths.set(tool, found);
    }
    this.watchdog = new Watchdog(ownerTag, options.logger);
  }

  /** True when the tool's binary was found at start. */
  isInstalled(tool: ToolName): boolean {
    return this.paths.has(tool);
  }

  /** Debian packages of the tools not found at start (each named once). */
  missingPackages(): string[] {
    const tools = (Object.keys(toolPackages) as ToolName[]).filter((tool) => !this.paths.has(tool));
    return [...new Set(tools.map((tool) => toolPackages[tool]))];
  }

  /** Absolute path of a tool, or the `tool-missing` outcome that names the package to install. */
  binary(tool: ToolName): string {
    const path = this.paths.get(tool);
    if (path === undefined) {
      throw new DomainError(
        'tool-missing',
        `${tool} is not installed on the server: install the Debian package '${toolPackages[tool]}' (apt-get install ${toolPackages[tool]}).`,
        { code: 'TOOL_NOT_INSTALLED', reason: 'Tool not installed' },
      );
    }
    return path;
  }

  /**
   * Runs one command. Resolves with its output when it exits 0 (or any code with
   * allowNonZeroExit); otherwise rejects with a DomainError: tool-missing, saturated, timeout,
   * command-failed (non-zero exit, output too large, not startable), aborted or shutting-down.
   */
  async run(options: RunOptions): Promise<RunResult> {
    if (!this.isInstalled(options.tool)) this.options.onOutcome?.(options.tool, 'not-installed');
    const binary = this.binary(options.tool);
    if (this.shuttingDown) throw shutdownError();
    options.signal?.throwIfAborted();
    const background = options.background === true;
    if (background) await this.acquireBackground(options.signal);
    else await this.acquire(options.tool, options.signal);
    // A waiter may get its slot just as killAll() starts: it must not spawn what nobody will stop.
    // (TypeScript keeps the narrowing from the check above across the await; the flag may have moved.)
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
    if (this.shuttingDown) {
      this.release(background);
      throw shutdownError();
    }
    try {
      return await this.execute(binary, options);
    } finally {
      this.release(background);
    }
  }

  /** Stops every running command (whole process groups) and refuses queued and new ones. */
  async killAll(): Promise<void> {
    this.shuttingDown = true;
    for (const waiter of this.waiting.splice(0)) waiter.reject(shutdownError());
    for (const waiter of this.backgroundWaiting.splice(0)) waiter.reject(shutdownError());
    const exits = [...this.running].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) {
            resolve();
            return;
          }
          child.once('close', () => {
            resolve();
          });
          this.stopGroup(child);
        }),
    );
    await Promise.all(exits);
    this.watchdog.close();
  }

  private async acquire(tool: ToolName, signal: AbortSignal | undefined): Promise<void> {
    if (this.active < this.options.concurrency) {
      this.active++;
      return;
    }
    if (this.waiting.length >= this.options.queue) {
      this.options.onOutcome?.(tool, 'saturated');
      throw new DomainError(
        'saturated',
        'Too many network tool commands are running or waiting; try again later.',
        { code: 'TOOL_QUEUE_FULL', reason: 'Too Many Requests', retryAfterSeconds: this.retryAfterSeconds },
      );
    }
    await this.wait(this.waiting, signal);
  }

  /**
   * True when a background run may take a slot now: fewer than `backgroundSlots` run, and one slot
   * stays free for requests (when there are two).
   */
  private get backgroundMayStart(): boolean {
    return this.backgroundActive < backgroundSlots && this.active < Math.max(1, this.options.concurrency - 1);
  }

  private async acquireBackground(signal: AbortSignal | undefined): Promise<void> {
    if (this.backgroundMayStart && this.waiting.length === 0 && this.backgroundWaiting.length === 0) {
      this.active++;
      this.backgroundActive++;
      return;
    }
    await this.wait(this.backgroundWaiting, signal);
  }

  /** Waits in a line until `release` hands over a slot (or the signal aborts). */
  private wait(line: Waiter[], signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      const onAbort = (): void => {
        const index = line.indexOf(waiter);
        if (index >= 0) line.splice(index, 1);
        reject(abortedError());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      line.push(waiter);
    });
  }

  private release(background: boolean): void {
    if (background) this.backgroundActive--;
    const next = this.waiting.shift();
    // The slot passes straight to the next waiting request, so `active` stays the same.
    if (next) {
      next.resolve();
      return;
    }
    this.active--;
    while (this.backgroundMayStart) {
      const waiter = this.backgroundWaiting.shift();
      if (!waiter) break;
      this.active++;
      this.backgroundActive++;
      waiter.resolve();
    }
  }

  /** SIGTERM to the whole group now, SIGKILL to it after the grace period. */
  private stopGroup(child: ChildProcess): void {
    signalGroup(child, 'SIGTERM');
    const timer = setTimeout(() => {
      signalGroup(child, 'SIGKILL');
    }, this.killGraceMs);
    timer.unref();
    child.once('exit', () => {
      clearTimeout(timer);
    });
  }

  private execute(binary: string, options: RunOptions): Promise<RunResult> {
    const started = performance.now();
    const limit = options.outputLimit ?? this.options.outputLimit;
    const reportLimit = limit * reportLimitFactor;
    const reportFile = options.report ? openReportFile() : undefined;
    let child: ChildProcess;
    try {
      child = spawn(binary, options.args, {
        env: { LC_ALL: 'C', PATH: this.options.toolPath, [ownerVariable]: ownerTag },
        stdio: reportFile === undefined ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe', reportFile],
        detached: true,
        shell: false,
        cwd: '/',
      });
    } catch (err) {
      if (reportFile !== undefined) closeSync(reportFile);
      throw err;
    }
    if (options.background === true && child.pid !== undefined) lowerPriority(child.pid);
    this.running.add(child);
    // spawn() returns once the command runs (libuv waits for its exec): register it right away.
    const pid = child.pid;
    if (pid !== undefined) this.watchdog.guard(pid);

    return new Promise<RunResult>((resolve, reject) => {
      const stdout: Buffer[] = [];
      let stdoutBytes = 0;
      let stderr = '';
      let stopReason: RunOutcome | undefined;
      let spawnError: Error | undefined;

      const stop = (reason: RunOutcome): void => {
        if (stopReason !== undefined) return;
        stopReason = reason;
        this.stopGroup(child);
      };
      const timer = setTimeout(() => {
        stop('timeout');
      }, options.timeoutMs);
      const onAbort = (): void => {
        stop(this.shuttingDown ? 'shutdown' : 'aborted');
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });

      const lines = options.onLine === undefined ? undefined : new LineSplitter(options.onLine);
      const { stdout: stdoutStream, stderr: stderrStream } = outputPipes(child);
      stdoutStream.on('data', (chunk: Buffer) => {
        if (stopReason !== undefined) return;
        stdoutBytes += chunk.length;
        if (stdoutBytes > limit) {
          stop('output-too-large');
          return;
        }
        stdout.push(chunk);
        lines?.push(chunk);
      });
      stderrStream.setEncoding('utf8');
      stderrStream.on('data', (chunk: string) => {
        // Keep only a bounded tail: stderr is for `details`, not for the answer.
        stderr = (stderr + chunk).slice(-4 * stderrKeep);
      });
      child.once('error', (err) => {
        spawnError = err;
      });
      child.once('exit', () => {
        // Children the tool forked may outlive it in its group: remove them, whatever the outcome.
        signalGroup(child, 'SIGKILL');
        if (pid !== undefined) this.watchdog.release(pid);
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        this.running.delete(child);
        if (this.shuttingDown && stopReason === undefined && signal !== null) stopReason = 'shutdown';
        const durationMs = Math.round(performance.now() - started);
        // What the tool printed last, even without its newline (traceroute ends a hop's line only
        // when the next hop starts), unless the cap stopped it.
        if (stopReason !== 'output-too-large') lines?.end();
        const text = Buffer.concat(stdout).toString('utf8');
        // The report is read once the command has exited, and only when it can be the answer.
        // Unlike stdout it cannot be cut off as it grows: a file is checked at the end.
        let report: string | undefined = '';
        if (reportFile !== undefined) {
          report = stopReason === undefined && !spawnError ? readReportFile(reportFile, reportLimit) : '';
          closeSync(reportFile);
        }
        if (report === undefined) stopReason ??= 'output-too-large';
        const exitCode = code ?? -1;
        let outcome: RunOutcome = stopReason ?? (exitCode === 0 ? 'ok' : 'exit-nonzero');
        if (spawnError) outcome = 'spawn-error';
        this.options.logger.info(
          { tool: options.tool, args: options.args, durationMs, exitCode: code, signal, outcome },
          'tool run',
        );
        this.options.onOutcome?.(options.tool, outcome);
        const details = tail(stderr) || tail(text);
        switch (outcome) {
          case 'timeout':
            reject(
              new DomainError(
                'timeout',
                `${options.tool} timed out after ${options.timeoutMs} ms and was stopped.`,
                { code: 'TOOL_TIMEOUT', reason: 'Tool timed out', details: details || undefined },
              ),
            );
            return;
          case 'output-too-large':
            // The command "failed" from the client's view; nothing the client sent was too large.
            reject(
              new DomainError(
                'command-failed',
                report === undefined
                  ? `${options.tool} wrote a report of more than ${reportLimit} bytes.`
                  : `${options.tool} produced more than ${limit} bytes of output and was stopped.`,
                { code: 'TOOL_OUTPUT_TOO_LARGE', reason: 'Output too large' },
              ),
            );
            return;
          case 'aborted':
            reject(abortedError());
            return;
          case 'shutdown':
            reject(shutdownError());
            return;
          case 'spawn-error':
            reject(
              new DomainError(
                'command-failed',
                `${options.tool} could not be started: ${spawnError?.message ?? 'unknown error'}.`,
                { code: 'TOOL_START_FAILED', reason: 'Command failed' },
              ),
            );
            return;
          case 'exit-nonzero':
            if (!options.allowNonZeroExit) {
              reject(
                new DomainError(
                  'command-failed',
                  `${options.tool} failed (${signal !== null ? `signal ${signal}` : `exit code ${exitCode}`}).`,
                  { code: 'TOOL_FAILED', reason: 'Command failed', details: details || undefined },
                ),
              );
              return;
            }
            break;
          case 'ok':
            break;
        }
        resolve({
          stdout: text,
          stderr: tail(stderr, 4 * stderrKeep),
          report: report ?? '',
          exitCode,
          durationMs,
        });
      });
    });
  }
}

/**
 * Cuts a byte stream into text lines as they complete. Bytes are kept until their line ends, so a
 * UTF-8 character split across chunks is decoded whole; a listener that throws cannot break a run.
 */
class LineSplitter {
  private pending: Buffer[] = [];

  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (let newline = chunk.indexOf(10); newline >= 0; newline = chunk.indexOf(10, start)) {
      this.pending.push(chunk.subarray(start, newline));
      this.emit();
      start = newline + 1;
    }
    if (start < chunk.length) this.pending.push(chunk.subarray(start));
  }

  /** Hands out a last line that had no newline. */
  end(): void {
    if (this.pending.length > 0) this.emit();
  }

  private emit(): void {
    const line = Buffer.concat(this.pending).toString('utf8').replace(/\r$/, '');
    this.pending = [];
    try {
      this.onLine(line);
    } catch {
      // Progress is a side channel: the command and its result carry on.
    }
  }
}

/**
 * A new empty file with no name, open for reading and writing, to be a command's file descriptor 3:
 * the command opens `/dev/fd/3` (nmap: `-oX /dev/fd/3`), which on Linux reopens the same file.
 *
 * Why not a pipe: Node gives a child's extra stdio entries as socket pairs, and opening
 * `/dev/fd/3` on a socket fails (ENXIO); Node has no pipe(). Why not a temporary directory (as
 * earlier versions did): creating it, reading the file back and removing it took three trips through
 * libuv's thread pool, 0.6 ms per scan on a quiet machine against 0.07 ms for this, and a killed
 * server left the directory behind. This file loses its name at once (O_EXCL in the system temp
 * directory, then unlink), so nothing is left whatever happens to the server. The name carries
 * the owner tag: in the instant between creating and unlinking, a dying server's file is removed
 * at the next start (orphans.ts). Synchronous calls: each takes microseconds on a small file, less
 * than a thread-pool round trip.
 */
function openReportFile(): number {
  const path = join(tmpdir(), `${nmapTempPrefix}${ownerTag}-${randomBytes(8).toString('hex')}`);
  const fd = openSync(path, 'wx+', 0o600);
  unlinkSync(path);
  return fd;
}

/**
 * The report the command wrote, or undefined when it is over `limit` bytes. A file that cannot be
 * read gives '' (the caller then says the report could not be read) rather than an exception in
 * the middle of the runner's bookkeeping.
 */
function readReportFile(fd: number, limit: number): string | undefined {
  try {
    const size = fstatSync(fd).size;
    if (size > limit) return undefined;
    const buffer = Buffer.alloc(size);
    let read = 0;
    while (read < size) {
      const n = readSync(fd, buffer, read, size - read, read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read).toString('utf8');
  } catch {
    return '';
  }
}

/** stdout and stderr of a command the runner started: pipes in every run (stdio 'pipe'). */
function outputPipes(child: ChildProcess): { stdout: Readable; stderr: Readable } {
  if (child.stdout === null || child.stderr === null)
    throw new Error('a command started without output pipes');
  return { stdout: child.stdout, stderr: child.stderr };
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    // A negative pid addresses the process group the detached child leads.
    process.kill(-child.pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

function abortedError(): DomainError {
  return new DomainError('aborted', 'The client disconnected; the command was stopped.', {
    code: 'CLIENT_CLOSED',
    reason: 'Client Closed Request',
  });
}

function shutdownError(): DomainError {
  return new DomainError('shutting-down', 'The server is shutting down; the command was stopped.', {
    code: 'SHUTTING_DOWN',
    reason: 'Shutting down',
  });
}

/** The first executable regular file named `name` in the colon-separated `searchPath`. */
export function findExecutable(name: string, searchPath: string): string | undefined {
  for (const dir of searchPath.split(':')) {
    if (!dir.startsWith('/')) continue; // only absolute directories: the cwd must not matter
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      continue;
    }
  }
  return undefined;
}

/**
 * An AbortSignal that fires when the client goes away before the response was sent, for
 * `RunOptions.signal`. It listens on the response's 'close' (emitted when the socket closes or the
 * response ends) and fires only when the response had not ended, so a normal answer never aborts.
 */
export function disconnectSignal(response: NodeJS.EventEmitter & { writableEnded: boolean }): AbortSignal {
  const controller = new AbortController();
  response.once('close', () => {
    if (!response.writableEnded) controller.abort(abortedError());
  });
  return controller.signal;
}

/** Gives a background command the lowest CPU priority; a command that already exited is no error. */
function lowerPriority(pid: number): void {
  try {
    setPriority(pid, backgroundNice);
  } catch {
    // ESRCH: it is gone already, and its exit is handled as any other.
  }
}

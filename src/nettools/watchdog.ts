/**
 * Tool commands die with the server, even when it is killed with no chance to stop them (kill -9,
 * out of memory): a small helper process, the watchdog (watchdog-process.ts), is told the pid of
 * each running command over a pipe, and kills their process groups when that pipe ends, which the
 * kernel does when the server dies, however it dies.
 *
 * Why not a parent-death signal on each command (`setpriv --pdeathsig KILL -- <tool>`, as earlier
 * versions did): it costs an extra exec per command (setpriv, then the tool: about 1 ms of CPU, 1-2 ms of
 * latency, docs/benchmarks.md "nettools"), and the kernel clears that signal when a binary with file
 * capabilities starts, so nmap and arp-scan in the Docker image outlived a killed server. The
 * watchdog costs two small pipe writes per command and one small process per server.
 *
 * The watchdog starts with the first command (a server that runs none has none), runs in its own
 * session (a Ctrl-C to the server's process group does not reach it) and never keeps the server's
 * event loop alive. If it dies while the server runs, the next command starts a new one and hands
 * it every pid still running.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';

/** The watchdog: its stdin is the pipe it watches; it has no stdout. */
type WatchdogProcess = ChildProcessByStdio<Writable, null, null>;

const watchdogScript = fileURLToPath(new URL('./watchdog-process.js', import.meta.url));

/** Delay before a watchdog that died while commands run is replaced (bounds a crash loop). */
const restartDelayMs = 1000;

export class Watchdog {
  private child: WatchdogProcess | undefined;
  private readonly guarded = new Set<number>();
  private closed = false;
  private restartTimer: NodeJS.Timeout | undefined;

  /**
   * @param owner the server's owner tag (orphans.ts): the watchdog also kills the processes that
   *   carry it, in case one was not registered yet.
   */
  constructor(
    private readonly owner: string,
    private readonly logger: Logger,
  ) {}

  /** The command with this pid (leader of its own process group) dies if the server dies. */
  guard(pid: number): void {
    this.guarded.add(pid);
    this.send(`+${pid}\n`);
  }

  /** The command has exited and its group was killed: nothing left to guard. */
  release(pid: number): void {
    if (!this.guarded.delete(pid)) return;
    this.send(`-${pid}\n`);
  }

  /**
   * Lets the watchdog exit: at shutdown, after killAll. It kills the groups still registered (none,
   * normally), but not the other processes of this owner: they may belong to another runner of the
   * same process (tests run several servers in one process).
   */
  close(): void {
    this.closed = true;
    clearTimeout(this.restartTimer);
    this.running()?.stdin.end('close\n');
    this.child = undefined;
  }

  private running(): WatchdogProcess | undefined {
    const child = this.child;
    return child !== undefined && child.exitCode === null && child.signalCode === null ? child : undefined;
  }

  private send(line: string): void {
    if (this.closed) return;
    const child = this.running();
    // A new watchdog is told every pid guarded so far, this one included.
    if (child === undefined) this.start();
    // A write the watchdog cannot take (it just died) is dropped: its replacement gets every pid.
    else child.stdin.write(line);
  }

  /** Starts a watchdog and tells it every pid guarded so far. */
  private start(): void {
    clearTimeout(this.restartTimer);
    let child: WatchdogProcess;
    try {
      child = spawn(process.execPath, [watchdogScript, this.owner], {
        // Its stdin is the pipe it watches; it prints nothing. An empty environment: it needs
        // none, and must not inherit the server's secrets.
        stdio: ['pipe', 'ignore', 'inherit'],
        env: {},
        detached: true,
        cwd: '/',
      });
    } catch (err) {
      this.logger.error(
        { err },
        'the tool watchdog could not be started: commands will not die with the server',
      );
      return;
    }
    this.child = child;
    // Neither the process nor its pipe keeps the server running.
    child.unref();
    child.stdin.on('error', () => {
      // EPIPE after the watchdog died: handled on 'exit'.
    });
    child.once('error', (err) => {
      this.logger.error(
        { err },
        'the tool watchdog could not be started: commands will not die with the server',
      );
    });
    child.once('exit', (code, signal) => {
      if (this.closed || this.child !== child) return;
      this.child = undefined;
      this.logger.warn({ code, signal }, 'the tool watchdog exited; a new one takes over');
      if (this.guarded.size > 0) {
        this.restartTimer = setTimeout(() => {
          if (!this.closed && this.running() === undefined && this.guarded.size > 0) this.start();
        }, restartDelayMs);
        this.restartTimer.unref();
      }
    });
    if (this.guarded.size > 0) child.stdin.write([...this.guarded].map((pid) => `+${pid}\n`).join(''));
  }
}

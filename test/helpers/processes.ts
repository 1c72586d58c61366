/**
 * Process inspection through /proc, for tests (and benches) that check which processes a server
 * started and that no child outlived a stopped command.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';

/** A command prefix that runs what follows as nobody (setpriv, util-linux; execs in place). */
export const asNobody: readonly string[] = ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups'];

/**
 * What to spawn for `node <script> <args>`, behind `wrapper` (a command that execs node in the same
 * process, e.g. `asNobody`) when one is given.
 */
export function nodeCommand(
  script: string,
  args: readonly string[] = [],
  wrapper: readonly string[] = [],
): { command: string; args: string[] } {
  const [command = process.execPath, ...prefix] = wrapper;
  const node = wrapper.length > 0 ? [process.execPath] : [];
  return { command, args: [...prefix, ...node, script, ...args] };
}

/** Pids of live (non-zombie) processes whose process group is `pgid`. */
export function processesInGroup(pgid: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name (which may contain spaces) start after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z' && Number(fields[2]) === pgid) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

/** True when the pid exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/**
 * Polls until `check` is true (bounded); the tests assert the final state, never the time. `check`
 * may ask over the network (a promise).
 */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  attempts = 100,
  intervalMs = 50,
): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return check();
}

/**
 * Waits (bounded) for the file in which a fake tool wrote "<its pid = process group> <child pid>"
 * when it started, and reads it.
 */
export async function waitForStartedFile(file: string): Promise<{ group: number; sleeper: number }> {
  if (!(await eventually(() => existsSync(file)))) throw new Error(`the fake tool never wrote ${file}`);
  const [group = 0, sleeper = 0] = readFileSync(file, 'utf8').trim().split(' ').map(Number);
  return { group, sleeper };
}

/** Pids of the live children of `parent` whose command name is `name`. */
export function childrenNamed(parent: number, name: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const command = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z' && Number(fields[1]) === parent && command === name) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

export function childNamed(parent: number, name: string): number | undefined {
  return childrenNamed(parent, name)[0];
}

/** The server's tool watchdog: its child running watchdog-process.js. */
export function watchdogOf(server: number): number | undefined {
  return childrenNamed(server, 'node').find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('watchdog-process.js');
    } catch {
      return false;
    }
  });
}

/** SIGKILL to each pid (a negative one: its process group) that still exists; exact pids only. */
export function killQuietly(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

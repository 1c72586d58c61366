/** Process inspection through /proc, for tests that check no child outlived a stopped command. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';

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

/** Polls until `check` is true (bounded); the tests assert the final state, never the time. */
export async function eventually(check: () => boolean, attempts = 100, intervalMs = 50): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    if (check()) return true;
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

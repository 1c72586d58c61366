/**
 * What a server that died without cleaning up (kill -9, out of memory, power cut of the container)
 * leaves behind, and its removal at the next start:
 *
 * - tool processes: each command the runner starts carries NETKEEP_OWNER=<owner tag> in its
 *   environment. A process whose owner is gone is killed with its whole process group. (Normally a
 *   tool dies with its server through the tool watchdog, watchdog.ts; this catches the rest, e.g. a
 *   command started in the instant the server died while its watchdog was being restarted.)
 * - temporary files and directories named `netkeep-nmap-<owner tag>-*`: nmap's XML report file,
 *   which loses its name the instant it is created (runner.ts, `openReportFile`), and the
 *   directories older versions wrote it to: removed when their owner is gone. Unnamed ones from
 *   older versions are removed once older than any scan can run.
 *
 * The owner tag is `<pid>.<start time>`: a pid alone may be reused by an unrelated process.
 * A process that exec'd a binary with file capabilities (nmap, arp-scan in the Docker image) does
 * not let its owner read its environment (the kernel makes it non-dumpable): only the watchdog,
 * which knows tools by pid, stops those.
 */
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Fields of /proc/<pid>/stat after the command name (which may contain spaces and ')'). */
function statFields(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** `<pid>.<start time in clock ticks since boot>`, or `<pid>.0` where /proc is not there. */
export function ownerTagOf(pid: number): string {
  // Field 22 of stat is the start time; fields here start at field 3 (state).
  return `${pid}.${statFields(pid)?.[19] ?? '0'}`;
}

/** This process's owner tag, given to every tool process and temp file it makes. */
export const ownerTag = ownerTagOf(process.pid);

/** The environment variable that names a tool process's owner. */
export const ownerVariable = 'NETKEEP_OWNER';

/** Prefix of nmap's report file in the system temp directory (of its directory, in older versions). */
export const nmapTempPrefix = 'netkeep-nmap-';

/** True while the process the tag names still runs (same pid, same start time, not a zombie). */
export function ownerAlive(tag: string): boolean {
  const [pid, start] = tag.split('.');
  if (pid === undefined || !/^\d+$/.test(pid)) return false;
  const fields = statFields(pid);
  return fields !== undefined && fields[0] !== 'Z' && (start === '0' || fields[19] === start);
}

/** No scan can run longer than NMAP_TIMEOUT_MS's largest value (24 h): older untagged dirs are dead. */
const untaggedMaxAgeMs = 24 * 3_600_000;

export interface Cleanup {
  /** Process groups killed (their leaders' pids). */
  readonly killed: number[];
  /** Temporary directories removed. */
  readonly removed: string[];
}

/** A process that carries NETKEEP_OWNER in its environment: a tool some netkeep server started. */
export interface ToolProcess {
  readonly pid: number;
  /** Its process group: the runner starts each command as the leader of its own group. */
  readonly pgid: number;
  /** The owner tag of the server that started it. */
  readonly owner: string;
}

/** Every tool process this user can see, from /proc (none where there is no /proc). */
export function toolProcesses(): ToolProcess[] {
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    // No /proc: nothing can be found this way.
  }
  const found: ToolProcess[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let environ: string;
    try {
      environ = readFileSync(`/proc/${entry}/environ`, 'utf8');
    } catch {
      continue; // gone, or not ours to read
    }
    const owner = environ
      .split('\0')
      .find((pair) => pair.startsWith(`${ownerVariable}=`))
      ?.slice(ownerVariable.length + 1);
    if (owner === undefined) continue;
    found.push({ pid: Number(entry), pgid: Number(statFields(entry)?.[2]), owner });
  }
  return found;
}

/** SIGKILL to the tool's whole group when it leads one, else to the process; false if it was gone. */
export function killToolProcess(tool: ToolProcess): boolean {
  try {
    process.kill(tool.pgid === tool.pid ? -tool.pgid : tool.pid, 'SIGKILL');
    return true;
  } catch {
    return false; // already gone
  }
}

/** Kills orphaned tool processes and removes orphaned temp files and directories; returns what it did. */
export function cleanupOrphans(tempDir = tmpdir(), now = Date.now()): Cleanup {
  const killed: number[] = [];
  for (const tool of toolProcesses()) {
    if (!ownerAlive(tool.owner) && killToolProcess(tool)) killed.push(tool.pid);
  }

  const removed: string[] = [];
  let names: string[] = [];
  try {
    names = readdirSync(tempDir);
  } catch {
    names = [];
  }
  for (const name of names) {
    if (!name.startsWith(nmapTempPrefix)) continue;
    const tag = /^netkeep-nmap-(\d+\.\d+)-/.exec(name)?.[1];
    const path = join(tempDir, name);
    try {
      const orphaned = tag !== undefined ? !ownerAlive(tag) : now - statSync(path).mtimeMs > untaggedMaxAgeMs;
      if (!orphaned) continue;
      rmSync(path, { recursive: true, force: true });
      removed.push(path);
    } catch {
      // Removed meanwhile, or not ours to remove.
    }
  }
  return { killed, removed };
}

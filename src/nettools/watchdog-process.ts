/**
 * The tool watchdog's program: `node watchdog-process.js <owner tag>`, started by the server
 * (watchdog.ts). It reads lines from stdin, `+<pid>` when the server started a command (the leader
 * of its own process group), `-<pid>` when that command has exited and its group was killed, and
 * `close` when the server shuts down normally (its commands already stopped).
 *
 * When stdin ends, the server is gone: the kernel closes a process's pipes however it dies, kill -9
 * included. The watchdog then kills, with SIGKILL, every group still registered and every process
 * whose environment names the server as its owner (orphans.ts), and exits. It writes nothing and
 * does nothing else, so it stays small.
 *
 * Why both: the pids cover binaries with file capabilities (nmap, arp-scan in the Docker image),
 * whose environment the kernel hides; the owner scan covers a command that exec'd but was not yet
 * registered when the server died. That scan sees every such command: a child that the server
 * forked holds the write end of this pipe until its exec (the end is close-on-exec), so stdin
 * cannot end before the command runs with its NETKEEP_OWNER.
 */
import { killToolProcess, toolProcesses } from './orphans.js';

const owner = process.argv[2] ?? '';
const groups = new Set<number>();
let pending = '';
/** The server said it is shutting down: its other commands, if any, are not ours to kill. */
let closing = false;

process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  const lines = (pending + chunk).split('\n');
  pending = lines.pop() ?? '';
  for (const line of lines) {
    if (line === 'close') closing = true;
    const match = /^([+-])(\d+)$/.exec(line);
    if (match === null) continue;
    const pid = Number(match[2]);
    if (match[1] === '+') groups.add(pid);
    else groups.delete(pid);
  }
});

/** stdin ended: the server died (or, after `close`, is shutting down). */
function serverGone(): void {
  for (const pid of groups) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // The group is gone already.
    }
  }
  if (!closing && owner !== '') {
    for (const tool of toolProcesses()) {
      if (tool.owner === owner) killToolProcess(tool);
    }
  }
  process.exit(0);
}

process.stdin.once('end', serverGone);
process.stdin.once('error', serverGone);

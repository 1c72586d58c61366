// `npm start`: install deps if missing, build if stale, then run the server as this process's child
// with the V8 flags of src/node-flags.ts (they must be on node's command line). SIGINT/SIGTERM are
// forwarded; the exit status is the server's, so a crash is a failure to a supervisor.
// Missing OS tools never stop the server: the endpoint that needs one answers 503 naming the package.
// NETKEEP_START_NO_PREPARE=1 (the test suite sets it): install nothing and build nothing; fail at
// once when node_modules is stale or there is no build, so a test never rewrites what a running
// suite is using.
//
// The chain is npm -> this script -> the server (package.json's `exec` replaces npm's shell, so
// npm's own forwarding of SIGTERM reaches this script). Whichever process of the chain is stopped,
// the server stops with it:
// - this script killed (even with SIGKILL): the server gets SIGTERM from the kernel, through
//   `setpriv --pdeathsig TERM` (util-linux) when installed;
// - npm killed without forwarding (SIGKILL): this script sees that its parent changed and stops the
//   server as for SIGTERM. Only when npm started it (npm_lifecycle_event is set): run as
//   `nohup node scripts/start.mjs &`, its parent is a shell, and that shell exiting (the terminal
//   closed) is no reason to stop.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { constants, totalmem } from 'node:os';
import { clearInterval, setInterval } from 'node:timers';
import { ensureBuild, ensureConsoleBuild, ensureDependencies, root } from './lib.mjs';

if (process.env.NETKEEP_START_NO_PREPARE === '1') {
  ensureDependencies({ install: false });
  if (!existsSync(join(root, 'dist', 'src', 'main.js'))) {
    console.error('netkeep: no build (dist/src/main.js) and NETKEEP_START_NO_PREPARE=1: not building');
    process.exit(1);
  }
} else {
  ensureDependencies();
  ensureBuild();
  ensureConsoleBuild();
}
const { serverNodeFlagsFor } = await import('../dist/src/node-flags.js');
const flags = serverNodeFlagsFor(process.env.NODE_OPTIONS ?? '', totalmem());

/** The parent pid as the kernel sees it now (process.ppid is read once, at start). */
function currentParent() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

const setprivFound = spawnSync('sh', ['-c', 'command -v setpriv'], { encoding: 'utf8' }).stdout.trim();
const serverCommand = [process.execPath, ...flags, 'dist/src/main.js'];
const [command, ...args] = setprivFound
  ? [setprivFound, '--pdeathsig', 'TERM', '--', ...serverCommand]
  : serverCommand;
if (!setprivFound)
  console.error(
    "netkeep: setpriv not found (Debian package 'util-linux'): if this script is killed, the server is not",
  );
const server = spawn(command, args, { cwd: root, stdio: 'inherit' });

let forwarded;
/** Forwards SIGINT as is, anything else (SIGTERM, SIGHUP, a lost parent) as SIGTERM. */
function stopServer(signal) {
  forwarded = signal === 'SIGINT' ? 'SIGINT' : 'SIGTERM';
  server.kill(forwarded);
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    stopServer(signal);
  });
}
if (process.env.npm_lifecycle_event !== undefined) {
  const parent = currentParent();
  const parentWatch = setInterval(() => {
    const now = currentParent();
    if (parent !== undefined && now !== undefined && now !== parent) {
      clearInterval(parentWatch);
      stopServer('SIGTERM');
    }
  }, 500);
  parentWatch.unref();
}

server.on('exit', (code, signal) => {
  if (code !== null) process.exit(code);
  // Killed by a signal: success only when it is the one we forwarded (and the server did not handle).
  process.exit(signal === forwarded ? 0 : 128 + (constants.signals[signal] ?? 0));
});

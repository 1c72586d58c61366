// `npm start`: install deps if missing, build if stale, then run the server as this process's child
// with the V8 flags of src/node-flags.ts (they must be on node's command line). SIGINT/SIGTERM are
// forwarded; the exit status is the server's, so a crash is a failure to a supervisor.
// Missing OS tools never stop the server: the endpoint that needs one answers 503 naming the package.
// NETKEEP_START_NO_PREPARE=1 (the test suite sets it): install nothing and build nothing; fail at
// once when node_modules is stale or there is no build, so a test never rewrites what a running
// suite is using.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { constants, totalmem } from 'node:os';
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
const server = spawn(process.execPath, [...flags, 'dist/src/main.js'], { cwd: root, stdio: 'inherit' });
let forwarded;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    forwarded = signal;
    server.kill(signal);
  });
}
server.on('exit', (code, signal) => {
  if (code !== null) process.exit(code);
  // Killed by a signal: success only when it is the one we forwarded (and the server did not handle).
  process.exit(signal === forwarded ? 0 : 128 + (constants.signals[signal] ?? 0));
});

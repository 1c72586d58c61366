// `npm start`: install deps if missing, build if stale, then run the server in this process's place.
// Missing OS tools never stop the server: the endpoint that needs one answers 503 naming the package.
import { spawn } from 'node:child_process';
import { ensureBuild, ensureDependencies, root } from './lib.mjs';

ensureDependencies();
ensureBuild();
const { serverNodeFlagsFor } = await import('../dist/src/node-flags.js');
const flags = serverNodeFlagsFor(process.env.NODE_OPTIONS ?? '');
const server = spawn(process.execPath, [...flags, 'dist/src/main.js'], { cwd: root, stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.kill(signal));
server.on('exit', (code, signal) => process.exit(code ?? (signal ? 0 : 1)));

// `npm run bench`: deps, build, then the benchmark suite. Prints figures; asserts nothing.
import { ensureBuild, ensureConsoleBuild, ensureDependencies, ensureOsTools, run } from './lib.mjs';

ensureDependencies();
ensureBuild();
ensureConsoleBuild();
await ensureOsTools();
run(process.execPath, ['dist/bench/run.js', ...process.argv.slice(2)]);

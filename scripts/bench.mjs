// `npm run bench`: deps, build, then the benchmark suite. Prints figures; asserts nothing.
import { ensureBuild, ensureDependencies, ensureOsTools, run } from './lib.mjs';

ensureDependencies();
ensureBuild();
await ensureOsTools();
run(process.execPath, ['dist/bench/run.js', ...process.argv.slice(2)]);

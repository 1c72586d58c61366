// `npm test`: deps, OS tools (apt-get when root), build, lint and format check, then every test file
// with Node's built-in test runner. Extra arguments are passed to the runner (e.g. a single file).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ensureBuild, ensureConsoleBuild, ensureDependencies, ensureOsTools, root, run } from './lib.mjs';

ensureDependencies();
ensureBuild();
ensureConsoleBuild();
await ensureOsTools();
run(join(root, 'node_modules', '.bin', 'eslint'), ['.']);
// The console's browser code is bundled by esbuild, which does not check types: tsc does, here.
run(join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'ui/tsconfig.json']);
run(join(root, 'node_modules', '.bin', 'prettier'), ['--check', '.', '--log-level', 'warn']);

function testFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testFiles(path);
    return name.endsWith('.test.js') ? [path] : [];
  });
}

const extra = process.argv.slice(2);
const files = extra.length > 0 ? extra : testFiles(join(root, 'dist', 'test')).sort();
run(process.execPath, ['--test', '--test-reporter=spec', '--test-concurrency=2', ...files]);

// `npm run import -- [--dry-run] [--timezone <IANA zone>] <path>`: installs and builds what is
// missing (as `npm start` does), then runs the compiled importer in this process.
import { ensureBuild, ensureDependencies } from './lib.mjs';

ensureDependencies();
ensureBuild();
await import('../dist/src/import/cli.js');

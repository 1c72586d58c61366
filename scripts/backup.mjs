// `npm run backup -- [<file>]`: builds what is missing (as `npm start` does), then copies the
// database with SQLite's online backup while the server runs.
import { ensureBuild, ensureDependencies } from './lib.mjs';

ensureDependencies();
ensureBuild();
await import('../dist/src/backup/cli.js');

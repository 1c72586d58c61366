// `npm run restore -- <file>`: builds what is missing (as `npm start` does), then puts a backup
// into a stopped server's DATA_DIR.
import { ensureBuild, ensureDependencies } from './lib.mjs';

ensureDependencies();
ensureBuild();
await import('../dist/src/backup/restore-cli.js');

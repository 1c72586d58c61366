// `npm run migrate-store -- [--batch <rows>] <postgres url>`: builds what is missing (as `npm start`
// does), then copies $DATA_DIR's SQLite store into the PostgreSQL database of the URL.
import { ensureBuild, ensureDependencies } from './lib.mjs';

ensureDependencies();
ensureBuild();
await import('../dist/src/store/postgres/migrate-cli.js');

/**
 * One HTTP test file, run against a server on each store: SQLite (always) and PostgreSQL (a private
 * server of the file, test/helpers/postgres.ts; skipped where its binaries are missing, never under
 * CI). The file's cases go in `body`, which gets the store's name and a `start` that builds an
 * in-process server (inject.ts) on that store: on PostgreSQL each `start` gets a database of its own,
 * so that the cases see the same empty store as on SQLite.
 *
 *   onEachStore('parent cycles', (store, start) => { before(async () => { server = await start(); }); ... });
 *
 * A case that reads or writes the tables itself (history seeded as the scanner writes it, "nothing
 * changed" row by row) does it through store-tables.ts, on either store. What only SQLite has (its
 * file, a restart on the same DATA_DIR, query plans) stays in a describe of its own.
 *
 * Where it stands (keep this list current):
 * - on both stores through onEachStore: test/devices/store-writes.test.ts, parent-cycle.test.ts,
 *   bulk.test.ts, routes.test.ts (all but the restart after kill -9), list-routes.test.ts,
 *   macs.test.ts, name-sort.test.ts, console-api.test.ts (not its SQLite query plans),
 *   json-bounds.test.ts (its HTTP part); test/compat/compat.test.ts (NetAlertX's endpoints and the
 *   CSV round trip; the CORS_ORIGINS refusals start a process, SQLite only), newer.test.ts (not
 *   trigger-scan with scanning on), open-ports.test.ts; test/names/routes.test.ts;
 *   test/alerts/routes.test.ts (the big outbox's page); test/live/metrics.test.ts (the device
 *   gauges); test/http/inprocess.test.ts; test/probes/hub.test.ts (the hub's probe API);
 * - on both stores as real processes (their own loop over the stores): test/devices/big-list.test.ts
 *   (bounded memory); test/backup/postgres-http.test.ts is GET /backup of a server on PostgreSQL,
 *   restored with `npm run restore` (the SQLite round trip: test/backup/restore.test.ts);
 *   test/probes/sites-e2e.test.ts (the hub on each store, probes in namespaces);
 * - SQLite only still (they touch storage): test/devices/group-commit.test.ts (SQLite's group
 *   commit), test/live/stream.test.ts (the real scanner), the console's browser tests
 *   (test/console/), test/http/fuzz.test.ts (run once by hand on PostgreSQL: no 5xx).
 */
import { after, describe } from 'node:test';
import type { ServerOptions } from '../../src/server.js';
import { InProcessServer } from './inject.js';
import { postgresMissing, startPostgres, type PostgresServer } from './postgres.js';
import { skipUnlessCi } from './requirements.js';

export type StoreName = 'SQLite' | 'PostgreSQL';

export type StartOnStore = (
  env?: Record<string, string>,
  options?: ServerOptions,
) => Promise<InProcessServer>;

export interface EachStoreOptions {
  /**
   * Whether the PostgreSQL run is on (default true). A string: off, with the reason (a part of the
   * PostgreSQL store the file needs is not built yet); the run shows as skipped with it.
   */
  readonly postgres?: true | string;
}

export function onEachStore(
  title: string,
  body: (store: StoreName, start: StartOnStore) => void,
  options: EachStoreOptions = {},
): void {
  describe(`${title} (SQLite)`, () => {
    body('SQLite', (env = {}, serverOptions = {}) => InProcessServer.start(env, serverOptions));
  });

  const off = options.postgres === undefined || options.postgres === true ? undefined : options.postgres;
  const skip = off ?? skipUnlessCi(postgresMissing(), 'PostgreSQL runs of the HTTP tests');
  describe(`${title} (PostgreSQL)`, { skip }, () => {
    let pg: Promise<PostgresServer> | undefined;
    let databases = 0;
    body('PostgreSQL', async (env = {}, serverOptions = {}) => {
      pg ??= startPostgres();
      const server = await pg;
      databases += 1;
      const url = await server.createDatabase(`http_${databases}`);
      return InProcessServer.start({ DATABASE_URL: url, ...env }, serverOptions);
    });
    // After the body's own `after` hooks (run in the order they were added): its servers are closed.
    after(async () => {
      if (pg !== undefined) await (await pg).stop();
    });
  });
}

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
 * - on both stores: test/devices/store-writes.test.ts (the device writes), parent-cycle.test.ts,
 *   bulk.test.ts, routes.test.ts (all but the restart after kill -9), list-routes.test.ts,
 *   macs.test.ts, name-sort.test.ts; test/compat/compat.test.ts (NetAlertX's endpoints and the
 *   CSV round trip; CORS_ORIGINS refusals start a process, SQLite only);
 * - GET /backup of a server on PostgreSQL, restored with `npm run restore`:
 *   test/backup/postgres-http.test.ts (a PostgreSQL-only file: the SQLite round trip is
 *   test/backup/restore.test.ts);
 * - not moved yet (they touch storage; SQLite only for now): test/compat/newer.test.ts,
 *   open-ports.test.ts (ports seeded through the SQLite watch store), test/devices/console-api.test.ts,
 *   json-bounds.test.ts (a deep JSON written by the sqlite3 CLI), big-list.test.ts,
 *   group-commit.test.ts, test/events.test.ts.
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

/**
 * One HTTP test file, run against a server on each store: SQLite (always) and PostgreSQL (a private
 * server of the file, test/helpers/postgres.ts; skipped where its binaries are missing, never under
 * CI). The file's cases go in `body`, which gets the store's name and a `start` that builds an
 * in-process server (inject.ts) on that store: on PostgreSQL each `start` gets a database of its own,
 * so that the cases see the same empty store as on SQLite.
 *
 *   onEachStore('parent cycles', (store, start) => { before(async () => { server = await start(); }); ... });
 *
 * A case that reads the SQLite file itself (`dataDir`) cannot run on PostgreSQL: such files keep
 * InProcessServer.
 *
 * Where it stands (switch a file's PostgreSQL run on once the parts it needs are built there):
 * - on both stores now: test/devices/store-writes.test.ts (the device writes), test/probes/hub.test.ts
 *   (the hub's probe API; it reads the tables of either store through store-rows.ts);
 * - on both, PostgreSQL off until GET /device (the device view) is built:
 *   test/devices/parent-cycle.test.ts;
 * - to move onto onEachStore once the PostgreSQL parts merge (HTTP only, no SQLite file read):
 *   test/devices/bulk.test.ts (bulkEdit, GET /device);
 * - first their SQLite file reads replaced by API reads: test/devices/routes.test.ts (dump()),
 *   list-routes.test.ts, macs.test.ts.
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

/**
 * Composition root: opens the database, resolves the token, builds the app and wires every feature
 * into it. `close()` is the graceful shutdown used by SIGTERM/SIGINT and by tests.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { openDatabase } from './db/connection.js';
import { resolveToken } from './http/auth.js';
import { buildApp, type App } from './http/app.js';
import { SqliteDeviceRepository } from './devices/repository.js';
import { registerDeviceListRoutes } from './devices/list-routes.js';
import { registerDeviceRoutes } from './devices/routes.js';
import { ApiError } from './http/errors.js';
import type { RunTool } from './scanner/discovery.js';
import { registerScanRoutes } from './scanner/routes.js';
import { Scanner } from './scanner/scanner.js';

export interface Server {
  readonly app: App;
  readonly token: string;
  /** Where the generated token is kept, when it was not configured. */
  readonly tokenFile: string | undefined;
  /** Stops accepting, lets requests in flight finish (bounded), stops children, closes the database. */
  close(): Promise<void>;
}

export async function createServer(config: Config, logger: Logger): Promise<Server> {
  const db = openDatabase(join(config.DATA_DIR, 'netkeep.db'));
  const { token, file } = resolveToken(config.API_TOKEN, config.tokenFromFile, config.DATA_DIR);
  const app = await buildApp({ token, bodyLimit: config.BODY_LIMIT, logger, isHealthy: () => db.open });

  // Feature wiring (devices, network tools, presence scanning) goes here.
  const devices = new SqliteDeviceRepository(db);
  registerDeviceRoutes(app, devices);
  registerDeviceListRoutes(app, devices);

  // --- presence scanning (src/scanner) -------------------------------------------------------
  // TODO(lead): use the shared runner: replace this placeholder with an adapter over
  // src/nettools/runner.ts (see docs/api/scanning.md, "Wiring"). Until then every cycle fails
  // with this 503 and changes nothing.
  const scanRunTool: RunTool = async () => {
    throw new ApiError(503, 'Unavailable', 'not wired yet');
  };
  const scanner = new Scanner({ db, config, logger, runTool: scanRunTool });
  registerScanRoutes(app, scanner);
  scanner.start();
  // --- end presence scanning -------------------------------------------------------------------

  let closing: Promise<void> | undefined;
  async function close(): Promise<void> {
    closing ??= (async () => {
      const deadline = new Promise<void>((resolve) =>
        setTimeout(resolve, config.SHUTDOWN_TIMEOUT_MS).unref(),
      );
      await Promise.race([app.close(), deadline]);
      await scanner.stop();
      if (db.open) db.close();
    })();
    return closing;
  }
  return { app, token, tokenFile: file, close };
}

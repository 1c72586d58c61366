/** Entry point: configuration, server, listen, and graceful shutdown on SIGTERM/SIGINT. */
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { createProbeServer, createServer } from './server.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  // Probe mode: scan and upload to the hub, no inventory here (docs/probes.md).
  const server =
    config.PROBE_HUB_URL !== ''
      ? await createProbeServer(config, logger)
      : await createServer(config, logger);
  if (server.tokenFile) logger.info({ tokenFile: server.tokenFile }, `API token is in ${server.tokenFile}`);

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => {
    stop('SIGTERM');
  });
  process.on('SIGINT', () => {
    stop('SIGINT');
  });

  await server.app.listen({ port: config.PORT, host: config.HOST });
  const address = server.app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  logger.info({ event: 'listening', host: config.HOST, port }, `netkeep listening on ${config.HOST}:${port}`);
}

main().catch((err: unknown) => {
  // A bad variable (here or found while wiring, e.g. SCAN_SUBNETS) is the operator's to fix: exit 2.
  if (err instanceof ConfigError) {
    process.stderr.write(`netkeep: configuration error: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(
    `netkeep: failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});

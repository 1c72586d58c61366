/**
 * Child process of the naming benchmark: the whole server (createServer, as main.ts builds it)
 * with the mDNS and NetBIOS sources pointed at the stand-ins' ports (BENCH_MDNS_PORT,
 * BENCH_NETBIOS_PORT) instead of 5353 and 137, listening on HOST:PORT.
 */
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { createServer } from '../src/server.js';

const config = loadConfig();
const server = await createServer(config, createLogger('warn'), {
  testOnlyNamePorts: {
    mdns: Number(process.env.BENCH_MDNS_PORT),
    netbios: Number(process.env.BENCH_NETBIOS_PORT),
  },
});
await server.app.listen({ port: config.PORT, host: config.HOST });
process.on('SIGTERM', () => {
  void server.close().then(() => process.exit(0));
});

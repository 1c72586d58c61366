/**
 * The in-process test tier: the real app (createServer: real SQLite file in a temp directory, every
 * plugin, the real error mapping) driven with Fastify's `app.inject`, without a child process or a
 * socket. For HTTP logic that needs no tool process: authentication, routing, validation, error
 * bodies, device CRUD. It starts in milliseconds; use TestServer (server.ts) when the test needs the
 * real process (signals, logs, tools, listening).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { createServer, type Server, type ServerOptions } from '../../src/server.js';
import { requestParts, testResponse, type RequestOptions, type TestResponse } from './server.js';

const token = 'inject-token-0123456789abcdef';

export class InProcessServer {
  private constructor(
    readonly server: Server,
    readonly dataDir: string,
    /** The PostgreSQL store's URL; '' on SQLite (the store is `dataDir`/netkeep.db). */
    readonly databaseUrl: string,
  ) {}

  readonly token = token;

  /** Builds the app on a fresh data directory; `env` overrides the safe test defaults. */
  static async start(
    env: Record<string, string> = {},
    options: ServerOptions = {},
  ): Promise<InProcessServer> {
    const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-inject-'));
    const config = loadConfig(
      {
        DATA_DIR: dataDir,
        API_TOKEN: token,
        // Never reach the internet or the system resolver from a test.
        INTERNETINFO_URL: 'http://127.0.0.1:9/json',
        SPEEDTEST_SERVER_URL: 'http://127.0.0.1:9',
        SPEEDTEST_BACKEND: 'builtin',
        DNS_SERVER: '127.0.0.1:9',
        WOL_BROADCAST: '127.255.255.255',
        // mDNS and NetBIOS ask each device's own address: on only where a test turns them on (test LANs).
        NAME_MDNS: 'off',
        NAME_NETBIOS: 'off',
        ...env,
      },
      dataDir, // no .env file there
    );
    const server = await createServer(config, createLogger('silent'), options);
    await server.app.ready();
    return new InProcessServer(server, dataDir, config.DATABASE_URL);
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<TestResponse> {
    const { headers, body } = requestParts(options, token);
    const response = await this.server.app.inject({
      method: method as 'GET',
      url: path,
      headers,
      ...(body === undefined ? {} : { payload: body }),
    });
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(response.headers)) {
      if (value !== undefined)
        responseHeaders.set(name, Array.isArray(value) ? value.join(', ') : String(value));
    }
    return testResponse(response.statusCode, responseHeaders, response.body);
  }

  async stop(): Promise<void> {
    await this.server.close();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

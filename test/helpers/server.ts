/**
 * Starts the real netkeep server as a child process (`node dist/src/main.js`) on a loopback port
 * with a fresh data directory, and talks to it over real HTTP.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { eventually, nodeCommand } from './processes.js';
import { tempDir } from './temp-dirs.js';

const mainScript = fileURLToPath(new URL('../../src/main.js', import.meta.url));
/** `npm start`'s script, in the source tree (dist/test/helpers → the repository root). */
const startScript = fileURLToPath(new URL('../../../scripts/start.mjs', import.meta.url));

export interface RequestOptions {
  /** JSON-serialised and sent with Content-Type: application/json. */
  readonly body?: unknown;
  /** Sent as-is (with `contentType`, default application/json). */
  readonly rawBody?: string;
  readonly contentType?: string;
  /** Overrides the server's token; null sends no Authorization header. */
  readonly token?: string | null;
  readonly headers?: Record<string, string>;
  readonly signal?: AbortSignal;
}

export interface TestResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** Parsed JSON body (undefined when the body is not JSON). */
  readonly body: unknown;
  /** The body as a record, for convenient field access in assertions. */
  readonly json: Record<string, unknown>;
}

/** What a test needs of a server to talk HTTP to it: TestServer (real process) or InProcessServer. */
export interface HttpClient {
  readonly dataDir: string;
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
}

export interface StartOptions {
  /** Extra environment variables (PORT, HOST, DATA_DIR and API_TOKEN are set unless given). */
  readonly env?: Record<string, string>;
  /** Reuse a data directory (e.g. after a restart); default a fresh temporary one. */
  readonly dataDir?: string;
  /** Omit API_TOKEN so the server generates one. */
  readonly generateToken?: boolean;
  /**
   * Start through `npm start`'s script (scripts/start.mjs), which runs the server as its child.
   * `process` is then the script: `stop()` (SIGTERM, forwarded) ends both, `kill()` only the script.
   */
  readonly viaStartScript?: boolean;
  /**
   * A command that runs `node <script>` (its argv, before node's path), e.g. `setpriv` options to
   * start the server as another user with capabilities. It must exec node in the same process.
   */
  readonly wrapper?: readonly string[];
}

export class TestServer {
  readonly logs: string[] = [];
  private exited: Promise<number | null>;

  private constructor(
    readonly process: ChildProcess,
    readonly url: string,
    readonly port: number,
    readonly token: string,
    readonly dataDir: string,
    private readonly ownsDataDir: boolean,
    logs: string[],
  ) {
    this.logs = logs;
    this.exited = new Promise((resolve) => {
      if (process.exitCode !== null) resolve(process.exitCode);
      else
        process.once('exit', (code) => {
          resolve(code);
        });
    });
  }

  static async start(options: StartOptions = {}): Promise<TestServer> {
    const dataDir = options.dataDir ?? tempDir('netkeep-test-');
    const token = options.generateToken ? '' : 'test-token-0123456789abcdef';
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      // Never reach the internet or the system resolver from a test.
      INTERNETINFO_URL: 'http://127.0.0.1:9/json',
      SPEEDTEST_SERVER_URL: 'http://127.0.0.1:9',
      SPEEDTEST_BACKEND: 'builtin', // speedtest-cli would ask speedtest.net: only in an isolated namespace
      DNS_SERVER: '127.0.0.1:9',
      WOL_BROADCAST: '127.255.255.255',
      // mDNS and NetBIOS ask each device's own address: on only where a test turns them on (test LANs).
      NAME_MDNS: 'off',
      NAME_NETBIOS: 'off',
      // npm start under a running suite must not install or build what the suite is using.
      NETKEEP_START_NO_PREPARE: '1',
      ...(options.generateToken ? {} : { API_TOKEN: token }),
      ...options.env,
    };
    const script = options.viaStartScript ? startScript : mainScript;
    const { command, args } = nodeCommand(script, [], options.wrapper);
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const logs: string[] = [];
    const port = await new Promise<number>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout });
      const errors = createInterface({ input: child.stderr });
      errors.on('line', (line) => logs.push(line));
      lines.on('line', (line) => {
        logs.push(line);
        const match = /"event":"listening".*"port":(\d+)/.exec(line);
        if (match?.[1]) resolve(Number(match[1]));
      });
      child.once('exit', (code) => {
        reject(new Error(`server exited with ${code} before listening:\n${logs.join('\n')}`));
      });
    });
    const actualToken = options.generateToken ? '' : (env.API_TOKEN ?? token);
    return new TestServer(
      child,
      `http://127.0.0.1:${port}`,
      port,
      actualToken,
      dataDir,
      !options.dataDir,
      logs,
    );
  }

  /**
   * Waits until `logs` holds every line the server wrote before now. The server's stdout reaches the
   * test asynchronously, so a line written before an answer can arrive after it; counting lines
   * without this barrier can miss a line of an earlier request. The barrier is a request to a unique
   * unknown path: its one log line comes after everything written before it.
   */
  async logsCaughtUp(): Promise<void> {
    const path = `/log-barrier/${randomUUID()}`;
    await this.request('GET', path);
    if (!(await eventually(() => this.logs.some((line) => line.includes(path))))) {
      throw new Error(`the server's log line for ${path} never arrived`);
    }
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<TestResponse> {
    const { headers, body } = requestParts(options, this.token);
    const response = await fetch(`${this.url}${path}`, { method, headers, body, signal: options.signal });
    return testResponse(response.status, response.headers, await response.text());
  }

  /** SIGTERM and wait; returns the exit code. Removes a temporary data directory. */
  async stop(options: { keepData?: boolean } = {}): Promise<number | null> {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill('SIGTERM');
    const code = await this.exited;
    if (this.ownsDataDir && !options.keepData) rmSync(this.dataDir, { recursive: true, force: true });
    return code;
  }

  /** SIGKILL: no chance to flush or clean up. Keeps the data directory. */
  async kill(): Promise<void> {
    this.process.kill('SIGKILL');
    await this.exited;
  }
}

/** The headers (token, content type) and body text of a request, for either tier. */
/**
 * Runs the server once, to the end, with a loopback listener, a token and `env`: for configurations
 * that must stop the start (exit 2, the variable named on stderr). `cwd`: where it looks for a .env
 * file.
 */
export function runServerToExit(env: Record<string, string>, cwd?: string): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [mainScript], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      API_TOKEN: 'x'.repeat(32),
      PORT: '0',
      HOST: '127.0.0.1',
      ...env,
    },
    ...(cwd === undefined ? {} : { cwd }),
    encoding: 'utf8',
    timeout: 30_000,
  });
}

export function requestParts(
  options: RequestOptions,
  defaultToken: string,
): { headers: Record<string, string>; body: string | undefined } {
  const headers: Record<string, string> = { ...options.headers };
  const token = options.token === undefined ? defaultToken : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (options.rawBody !== undefined) {
    body = options.rawBody;
    headers['content-type'] = options.contentType ?? 'application/json';
  } else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] = options.contentType ?? 'application/json';
  }
  return { headers, body };
}

/** A response with its body parsed as JSON when it is JSON. */
export function testResponse(status: number, headers: Headers, text: string): TestResponse {
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const json = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  return { status, headers, text, body: parsed, json };
}

/** The standard error body fields, for deepEqual-style assertions. */
export function errorShape(body: Record<string, unknown>): {
  success: unknown;
  error: unknown;
  message: unknown;
} {
  return { success: body.success, error: body.error, message: body.message };
}

export const notAuthorizedBody = {
  success: false,
  message: 'ERROR: Not authorized',
  error: 'Forbidden',
  code: 'FORBIDDEN',
};

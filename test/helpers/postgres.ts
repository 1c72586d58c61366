/**
 * A private PostgreSQL server for one test file or bench run: Debian's `postgresql` binaries,
 * `initdb` in a new temporary directory, `pg_ctl start` on a free loopback port with its socket in
 * that directory, a role and a database with a password. `stop()` stops it and removes the
 * directory; a process exit that skipped `stop()` (a failed test, an interrupted bench) stops it
 * too. The packaged cluster is never touched.
 *
 * PostgreSQL refuses to run as root, so under root the server runs as the `postgres` user
 * (`runuser`), in a directory that user owns.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandMissing } from './requirements.js';

/** The Debian package of the server binaries. */
export const postgresPackage = 'postgresql';

/** The newest installed `/usr/lib/postgresql/<major>/bin` with an initdb, or undefined. */
export function postgresBinDir(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const majors = readdirSync(base)
    .filter((d) => /^\d+$/.test(d) && existsSync(join(base, d, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return majors[0] === undefined ? undefined : join(base, majors[0], 'bin');
}

/** Why a test cannot start a PostgreSQL here (naming the package), or undefined when it can. */
export function postgresMissing(): string | undefined {
  const bin = postgresBinDir();
  if (bin === undefined) return `needs PostgreSQL's server binaries (apt-get install ${postgresPackage})`;
  return commandMissing(join(bin, 'pg_ctl'), postgresPackage);
}

export interface PostgresServer {
  /** `postgres://netkeep:<password>@127.0.0.1:<port>/netkeep` */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly user: string;
  readonly password: string;
  /** The server's temporary directory (data, socket, log), removed by stop(). */
  readonly dir: string;
  /**
   * A further database on the same server, owned by the same role: empty, or a copy of
   * `template` (a database nobody is connected to); its URL.
   */
  createDatabase(name: string, template?: string): Promise<string>;
  dropDatabase(name: string): Promise<void>;
  /** Stops the server, keeping its data (PostgreSQL down), until up(). */
  down(): Promise<void>;
  /** Starts it again after down(), on the same port with the same data. */
  up(): Promise<void>;
  /** Stops the server (immediately) and removes its directory. Idempotent. */
  stop(): Promise<void>;
}

export interface PostgresOptions {
  /**
   * Keep PostgreSQL's durability (fsync, synchronous commit): for benches measuring durable
   * writes. Tests default to off, which only matters if the machine itself crashes.
   */
  readonly durable?: boolean;
}

interface Owner {
  readonly uid: number;
  readonly gid: number;
}

/** The `postgres` user's ids from /etc/passwd (under root), or undefined to run as ourselves. */
function serverOwner(): Owner | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const fields = line?.split(':');
  if (fields === undefined || fields.length < 4) {
    throw new Error('PostgreSQL refuses to run as root and there is no postgres user to run it as');
  }
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => {
        resolve(port);
      });
    });
  });
}

/** Runs a PostgreSQL binary (as the owner under root); rejects with its output when it fails. */
async function runBinary(
  owner: Owner | undefined,
  command: string,
  args: readonly string[],
): Promise<string> {
  const [cmd, argv] =
    owner === undefined ? [command, args] : ['runuser', ['-u', 'postgres', '--', command, ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], cwd: '/' });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve(output);
      else reject(new Error(`${command} ${args.join(' ')} failed (exit ${code}): ${output.trim()}`));
    });
  });
}

function chown(path: string, owner: Owner | undefined): void {
  if (owner !== undefined) chownSync(path, owner.uid, owner.gid);
}

/** Starts a private server. Throws naming the package when PostgreSQL is not installed. */
export async function startPostgres(options: PostgresOptions = {}): Promise<PostgresServer> {
  const missing = postgresMissing();
  if (missing !== undefined) throw new Error(`cannot start PostgreSQL: ${missing}`);
  const bin = postgresBinDir() ?? '';
  const owner = serverOwner();
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-pg-'));
  chown(dir, owner);
  const data = join(dir, 'data');
  const socketDir = join(dir, 'socket');
  const log = join(dir, 'server.log');
  const pwfile = join(dir, 'superuser-password');
  const password = randomBytes(18).toString('base64url');
  const user = 'netkeep';
  const database = 'netkeep';
  const pgCtl = join(bin, 'pg_ctl');
  let started = false;
  let stopped = false;

  const stopSync = (): void => {
    if (stopped) return;
    stopped = true;
    if (started) {
      const [cmd, argv] =
        owner === undefined
          ? [pgCtl, ['stop', '-D', data, '-m', 'immediate', '-s']]
          : ['runuser', ['-u', 'postgres', '--', pgCtl, 'stop', '-D', data, '-m', 'immediate', '-s']];
      spawnSync(cmd, argv, { stdio: 'ignore', cwd: '/' });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  // A test that fails before its `after` hook, or a bench that throws, must not leave a server
  // running: stop it when this process exits, whatever the reason.
  process.once('exit', stopSync);

  try {
    // The superuser's password is never used (local socket connections are trusted, and only the
    // test's own user account can reach the socket directory) but initdb wants one for -A scram.
    writeFileSync(pwfile, randomBytes(18).toString('base64url'), { mode: 0o600 });
    chown(pwfile, owner);
    await runBinary(owner, join(bin, 'initdb'), [
      '-D',
      data,
      '-U',
      'postgres',
      '--pwfile',
      pwfile,
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      '-E',
      'UTF8',
      '--locale=C',
      '--no-sync',
    ]);
    mkdirSync(socketDir, { mode: 0o700 });
    chown(socketDir, owner);
    const port = await freePort();
    const settings = [
      '-c listen_addresses=127.0.0.1',
      `-p ${port}`,
      `-c unix_socket_directories=${socketDir}`,
      ...(options.durable === true
        ? []
        : ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off']),
    ];
    const startServer = async (): Promise<void> => {
      await runBinary(owner, pgCtl, [
        'start',
        '-w',
        '-t',
        '60',
        '-D',
        data,
        '-l',
        log,
        '-s',
        '-o',
        settings.join(' '),
      ]);
    };
    await startServer();
    started = true;

    const psql = async (sql: string, db = 'postgres'): Promise<void> => {
      await runBinary(owner, join(bin, 'psql'), [
        '-X',
        '-q',
        '-v',
        'ON_ERROR_STOP=1',
        '-h',
        socketDir,
        '-p',
        String(port),
        '-U',
        'postgres',
        '-d',
        db,
        '-c',
        sql,
      ]);
    };
    // The password is random base64url text: no quote can end the literal.
    await psql(`CREATE ROLE ${user} LOGIN PASSWORD '${password}'`);
    await psql(`CREATE DATABASE ${database} OWNER ${user}`);
    const host = '127.0.0.1';
    const urlOf = (db: string): string => `postgres://${user}:${password}@${host}:${port}/${db}`;
    return {
      url: urlOf(database),
      host,
      port,
      database,
      user,
      password,
      dir,
      async createDatabase(name: string, template?: string): Promise<string> {
        for (const n of [name, template ?? name])
          if (!/^[a-z_][a-z0-9_]*$/.test(n)) throw new Error(`not a plain database name: ${n}`);
        await psql(
          `CREATE DATABASE ${name} OWNER ${user}${template === undefined ? '' : ` TEMPLATE ${template}`}`,
        );
        return urlOf(name);
      },
      async dropDatabase(name: string): Promise<void> {
        if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`);
        await psql(`DROP DATABASE ${name} WITH (FORCE)`);
      },
      async down(): Promise<void> {
        await runBinary(owner, pgCtl, ['stop', '-w', '-D', data, '-m', 'fast', '-s']);
      },
      up: startServer,
      stop(): Promise<void> {
        process.removeListener('exit', stopSync);
        stopSync();
        return Promise.resolve();
      },
    };
  } catch (err) {
    const serverLog = existsSync(log)
      ? readFileSync(log, 'utf8').trim().split('\n').slice(-10).join('\n')
      : '';
    process.removeListener('exit', stopSync);
    stopSync();
    throw serverLog === '' ? err : new Error(`${(err as Error).message}\nserver log:\n${serverLog}`);
  }
}

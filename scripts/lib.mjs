// Helpers shared by `npm start`, `npm test` and `npm run bench`: they make a fresh clone runnable
// (npm deps, compiled output, Debian tools) using nothing but Node's built-in modules, because they
// run before node_modules exists.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('..', import.meta.url));

/** Runs a command in the project root with inherited stdio; exits the process when it fails. */
export function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', ...options });
  if (result.status !== 0) {
    console.error(`netkeep: '${command} ${args.join(' ')}' failed (exit ${result.status ?? result.signal})`);
    process.exit(result.status ?? 1);
  }
}

function newestMtime(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/**
 * Installs npm dependencies when node_modules was not installed from this exact lock file. The lock
 * file's hash is recorded after a successful install (content, not mtime: a fresh checkout must not
 * look newer than a good install).
 */
export function ensureDependencies({ install = true } = {}) {
  const marker = join(root, 'node_modules', '.netkeep-lock-hash');
  const lock = join(root, 'package-lock.json');
  const lockHash = existsSync(lock) ? createHash('sha256').update(readFileSync(lock)).digest('hex') : 'none';
  if (existsSync(marker) && readFileSync(marker, 'utf8') === lockHash) return;
  if (!install) {
    console.error(
      'netkeep: node_modules was not installed from this package-lock.json, and installing is not allowed here (NETKEEP_START_NO_PREPARE=1): run npm ci',
    );
    process.exit(1);
  }
  console.error('netkeep: installing npm dependencies');
  run('npm', existsSync(lock) ? ['ci', '--no-audit', '--no-fund'] : ['install', '--no-audit', '--no-fund']);
  writeFileSync(marker, lockHash);
}

/** Compiles TypeScript when any source is newer than the last build. */
export function ensureBuild() {
  const built = newestMtime(join(root, 'dist', '.tsbuildinfo'));
  const sources = Math.max(
    ...['src', 'test', 'bench', 'tsconfig.json', 'package-lock.json'].map((p) => newestMtime(join(root, p))),
  );
  if (built >= sources && existsSync(join(root, 'dist', 'src', 'main.js'))) return;
  console.error('netkeep: compiling TypeScript');
  run(join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json']);
}

/**
 * Builds the web console (scripts/build-console.mjs) when ui/, its build script or the compiled
 * server it reads the field catalogue from is newer than the last console build. Call after
 * ensureBuild().
 */
export function ensureConsoleBuild() {
  const built = newestMtime(join(root, 'dist', 'console', 'build.json'));
  const sources = Math.max(
    ...['ui', 'scripts/build-console.mjs', 'dist/.tsbuildinfo', 'package-lock.json'].map((p) =>
      newestMtime(join(root, p)),
    ),
  );
  if (built >= sources && existsSync(join(root, 'dist', 'console', 'index.html'))) return;
  console.error('netkeep: building the web console');
  run(process.execPath, [join(root, 'scripts', 'build-console.mjs')]);
}

/**
 * Debian packages of the commands the tests and benches need besides the ones netkeep itself runs,
 * keyed by command name. netkeep's own tools are listed once, in the tool runner (`toolPackages` in
 * src/nettools/runner.ts); `ensureOsTools` reads them from the build.
 */
export const osTools = {
  ip: 'iproute2',
  tc: 'iproute2',
  sysctl: 'procps', // the test LAN's routers (minimal Debian images lack it)
  setpriv: 'util-linux', // npm start's parent-death signal for the server; non-root tests switch user
  mosquitto: 'mosquitto', // a real MQTT broker for the alert tests
  chromium: 'chromium', // the console's browser tests (driven by playwright-core)
  'systemd-analyze': 'systemd', // verifies the shipped systemd unit
  sqlite3: 'sqlite3', // tests write rows as another process would
  setcap: 'libcap2-bin', // non-root tests give tool copies file capabilities; getcap reads them at start
  // The DHCP server of the naming and security watch tests on a test LAN: the binary only (the
  // `dnsmasq` package would also install and start a system service).
  dnsmasq: 'dnsmasq-base',
  udhcpc: 'udhcpc', // busybox's DHCP client, for the test LAN's hosts
  // The PostgreSQL store's tests and benches start their own server (test/helpers/postgres.ts). The
  // server binaries are not on PATH (/usr/lib/postgresql/<major>/bin); postgresql-common's
  // pg_ctlcluster, which comes with them, is.
  pg_ctlcluster: 'postgresql',
};

function onPath(command) {
  return spawnSync('sh', ['-c', 'command -v "$1"', 'sh', command], { stdio: 'ignore' }).status === 0;
}

/** Installs missing OS tools with apt-get when running as root; otherwise lists what is missing. Needs the build. */
export async function ensureOsTools() {
  const { toolPackages } = await import('../dist/src/nettools/runner.js');
  const packages = { ...toolPackages, ...osTools };
  const missing = [
    ...new Set(
      Object.keys(packages)
        .filter((c) => !onPath(c))
        .map((c) => packages[c]),
    ),
  ];
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0) {
    console.error(`netkeep: not root, so not installing: ${missing.join(' ')} (apt-get install them)`);
    return;
  }
  console.error(`netkeep: installing Debian packages: ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  run('apt-get', ['update', '-qq'], { env });
  run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { env });
}

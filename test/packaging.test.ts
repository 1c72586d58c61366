/**
 * The installation files are checked here, as far as this machine can: the systemd unit with
 * `systemd-analyze verify` (and its security directives), the Dockerfile with dockerfile-utils'
 * linter and a structural check (base image, non-root user, capabilities, the OS tools),
 * docker-compose.yml for what host networking and the capabilities need, and .env.example for
 * every variable with a default that loads. No Docker engine runs here, so no image is built
 * (docs/install.md says so).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { validate } from 'dockerfile-utils';
import { loadConfig, parseDotEnv, variables } from '../src/config.js';
import { toolPackages } from '../src/nettools/runner.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string): string => readFileSync(`${root}${path}`, 'utf8');

test('systemd unit: systemd-analyze verify passes; non-root with the two capabilities, hardened', () => {
  const verify = spawnSync('systemd-analyze', ['verify', `${root}packaging/netkeep.service`], {
    encoding: 'utf8',
  });
  assert.equal(verify.error, undefined, 'systemd-analyze is installed (Debian package systemd)');
  assert.equal(verify.status, 0, verify.stderr);
  assert.equal(verify.stderr.trim(), '', 'no warnings');
  const unit = read('packaging/netkeep.service');
  for (const line of [
    'DynamicUser=yes',
    'StateDirectory=netkeep',
    'Environment=DATA_DIR=/var/lib/netkeep',
    'AmbientCapabilities=CAP_NET_RAW CAP_NET_ADMIN',
    'CapabilityBoundingSet=CAP_NET_RAW CAP_NET_ADMIN',
    'NoNewPrivileges=yes',
    'ProtectSystem=strict',
    'Restart=on-failure',
  ])
    assert.ok(unit.split('\n').includes(line), line);
  assert.doesNotMatch(unit, /^User=root/m);
});

test('Dockerfile: lints clean; Node 20 on Debian slim, the OS tools, non-root, file capabilities', () => {
  const dockerfile = read('Dockerfile');
  assert.deepEqual(
    validate(dockerfile).map(
      (d) => `${d.range.start.line + 1}: ${typeof d.message === 'string' ? d.message : d.message.value}`,
    ),
    [],
  );
  const from = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
  assert.ok(from.length > 0 && from.every((image) => image === 'node:20-bookworm-slim'), from.join(', '));
  const install = /apt-get install[^&]*/.exec(dockerfile)?.[0] ?? '';
  for (const pkg of new Set([...Object.values(toolPackages), 'iproute2', 'util-linux', 'libcap2-bin']))
    assert.match(install, new RegExp(`\\b${pkg}\\b`), `installs ${pkg}`);
  assert.match(dockerfile, /setcap cap_net_raw,cap_net_admin\+eip \/usr\/bin\/nmap/);
  assert.match(dockerfile, /setcap cap_net_raw,cap_net_admin\+eip \/usr\/sbin\/arp-scan/);
  assert.match(dockerfile, /RUN npm ci/);
  const users = [...dockerfile.matchAll(/^USER (\S+)/gm)].map((m) => m[1]);
  assert.ok(users.length > 0 && users.at(-1) !== 'root' && users.at(-1) !== '0', 'runs as a non-root user');
  assert.match(dockerfile, /^HEALTHCHECK[\s\S]*\/health/m);
  assert.match(dockerfile, /^CMD \["node",.*"dist\/src\/main\.js"\]/m);
});

/** The COPY lines of one Dockerfile stage: [sources, destination, --from stage or undefined]. */
function copies(stage: string): Array<{ sources: string[]; dest: string; from: string | undefined }> {
  return [...stage.matchAll(/^COPY (.+)$/gm)].map(([, rest = '']) => {
    const words = rest.split(/\s+/);
    const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
    const paths = words.filter((w) => !w.startsWith('--'));
    return { sources: paths.slice(0, -1), dest: paths.at(-1) ?? '', from };
  });
}

test('Dockerfile replayed without Docker: its build stage builds, its image serves /health and the console', async () => {
  // No Docker engine here: the stages' COPY lines are carried out by hand, the installed
  // node_modules stand in for `npm ci` (and are not pruned), and the build stage's other RUN
  // commands run for real. A file the image needs but the stages do not build or copy fails here,
  // as the console did (the image answered /ui/ with 503: ui/ was not built).
  const [build = '', runtime = ''] = read('Dockerfile')
    .split(/^FROM .*$/m)
    .slice(1);
  const buildCommands = [...build.matchAll(/^RUN (.+)$/gm)]
    .flatMap(([, line = '']) => line.split('&&').map((command) => command.trim()))
    .filter((command) => !/^npm (ci|prune)\b/.test(command));
  assert.ok(buildCommands.length > 0, 'the build stage builds something');
  const work = mkdtempSync(join(tmpdir(), 'netkeep-docker-replay-'));
  const buildDir = join(work, 'build');
  const appDir = join(work, 'app');
  const dataDir = join(work, 'data');
  mkdirSync(buildDir);
  mkdirSync(appDir);
  mkdirSync(dataDir);
  try {
    for (const { sources, dest, from } of copies(build)) {
      assert.equal(from, undefined);
      for (const source of sources)
        cpSync(join(root, source), join(buildDir, dest, dest.endsWith('/') ? source : ''), {
          recursive: true,
        });
    }
    symlinkSync(join(root, 'node_modules'), join(buildDir, 'node_modules'));
    for (const command of buildCommands) {
      const built = spawnSync('sh', ['-c', command], { cwd: buildDir, encoding: 'utf8' });
      assert.equal(built.status, 0, `${command}: ${built.stdout}${built.stderr}`);
    }
    for (const { sources, dest, from } of copies(runtime))
      for (const source of sources) {
        const origin = from === 'build' ? join(buildDir, source.replace(/^\/app\//, '')) : join(root, source);
        const target = dest.endsWith('/')
          ? join(appDir, dest, source.split('/').at(-1) ?? '')
          : join(appDir, dest);
        if (source.endsWith('node_modules')) symlinkSync(join(root, 'node_modules'), target);
        else cpSync(origin, target, { recursive: true });
      }
    const server = spawn(process.execPath, ['dist/src/main.js'], {
      cwd: appDir,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        DATA_DIR: dataDir,
        HOST: '127.0.0.1',
        PORT: '0',
        API_TOKEN: 'docker-replay-token-0123456789',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        createInterface({ input: server.stdout }).on('line', (line) => {
          const match = /"event":"listening".*"port":(\d+)/.exec(line);
          if (match?.[1] !== undefined) resolve(Number(match[1]));
        });
        server.once('exit', (code) => {
          reject(new Error(`the image's server exited with ${code}`));
        });
      });
      assert.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200);
      const console = await fetch(`http://127.0.0.1:${port}/ui/`);
      assert.equal(console.status, 200, 'the web console is in the image');
      assert.match(await console.text(), /<script type="module" src="\/ui\/assets\//);
    } finally {
      server.kill('SIGTERM');
      await new Promise((resolve) => server.once('exit', resolve));
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('docker-compose.yml: host network, NET_RAW/NET_ADMIN, a volume for DATA_DIR, health check, restart', () => {
  const compose = read('docker-compose.yml');
  assert.match(compose, /^\s+network_mode: host$/m);
  assert.match(compose, /^\s+- NET_RAW$/m);
  assert.match(compose, /^\s+- NET_ADMIN$/m);
  assert.match(compose, /^\s+DATA_DIR: \/data$/m);
  assert.match(compose, /^\s+- netkeep-data:\/data$/m);
  assert.match(compose, /^\s+test: .*\/health/m);
  assert.match(compose, /^\s+restart: unless-stopped$/m);
  assert.doesNotMatch(compose, /privileged: true/);
});

test('.env.example: every variable, commented out, and its values load', () => {
  const example = read('.env.example');
  const shown = new Map<string, string>();
  for (const [, name = '', value = ''] of example.matchAll(/^# ([A-Z][A-Z0-9_]*)=(.*)$/gm))
    shown.set(name, value);
  assert.deepEqual([...shown.keys()].sort(), Object.keys(variables).sort());
  // Each line shows the default (API_TOKEN's is "generated": the line shows how to set one).
  for (const [name, spec] of Object.entries(variables))
    if (name !== 'API_TOKEN') assert.equal(shown.get(name), spec.default, `${name}'s default`);
  assert.deepEqual(parseDotEnv(example), {}, 'nothing is set by copying it as is');
  const uncommented = example.replace(/^# ([A-Z][A-Z0-9_]*=)/gm, '$1');
  const config = loadConfig(
    { ...parseDotEnv(uncommented), DATA_DIR: '/tmp/netkeep-env-example' },
    '/nonexistent',
  );
  assert.equal(config.PORT, 20212);
});

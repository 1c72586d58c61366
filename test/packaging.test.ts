/**
 * The installation files are checked here, as far as this machine can: the systemd unit with
 * `systemd-analyze verify` (and its security directives), the Dockerfile with dockerfile-utils'
 * linter and a structural check (base image, non-root user, capabilities, the OS tools),
 * docker-compose.yml for what host networking and the capabilities need, and .env.example for
 * every variable with a default that loads. No Docker engine runs here, so no image is built
 * (docs/install.md says so).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
  for (const [, name = '', value = ''] of example.matchAll(/^# ([A-Z_]+)=(.*)$/gm)) shown.set(name, value);
  assert.deepEqual([...shown.keys()].sort(), Object.keys(variables).sort());
  assert.deepEqual(parseDotEnv(example), {}, 'nothing is set by copying it as is');
  const uncommented = example.replace(/^# ([A-Z_]+=)/gm, '$1');
  const config = loadConfig(
    { ...parseDotEnv(uncommented), DATA_DIR: '/tmp/netkeep-env-example' },
    '/nonexistent',
  );
  assert.equal(config.PORT, 20212);
});

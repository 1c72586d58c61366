/**
 * The lease readers, table-driven against lease files captured from the real servers
 * (test/fixtures/names/README.md), then against hostile content: every name stored is clean
 * (trimmed, at most 255 characters, no control characters) and nothing throws out of a read.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from '../../src/config.js';
import { cleanName } from '../../src/names/clean.js';
import type { Lease, LeaseFormat } from '../../src/names/leases/lease.js';
import { LeaseFiles, parseLeases } from '../../src/names/leases/reader.js';
import { runServerToExit } from '../helpers/server.js';

const fixtures = fileURLToPath(new URL('../../../test/fixtures/names/', import.meta.url));
const fixture = (name: string): string => readFileSync(join(fixtures, name), 'utf8');

type Expected = Pick<Lease, 'mac' | 'ip' | 'hostname' | 'clientId'> & { expires: string | null };
const summary = (leases: readonly Lease[]): Expected[] =>
  leases
    .map((l) => ({
      mac: l.mac,
      ip: l.ip,
      hostname: l.hostname,
      clientId: l.clientId,
      expires: l.expires === null ? null : l.expires.toISOString(),
    }))
    .sort((a, b) => a.mac.localeCompare(b.mac));

/** Lease n (1 or 2) of a fixture: the fixtures' two clients, 02:00:00:aa:00:0n, client id 01:<MAC>. */
const lease = (
  n: 1 | 2,
  ip: string,
  hostname: string,
  expires: string | null,
  clientId?: string,
): Expected => {
  const mac = `02:00:00:aa:00:0${n}`;
  return { mac, ip, hostname, clientId: clientId ?? `01:${mac}`, expires };
};
const unix = (seconds: number): string => new Date(seconds * 1000).toISOString();

const realFiles: { format: LeaseFormat; file: string; leases: Expected[] }[] = [
  {
    format: 'dnsmasq',
    file: 'dnsmasq.leases',
    leases: [
      lease(1, '10.231.250.63', 'kitchen-pi', unix(1795739049)),
      lease(2, '10.231.250.64', '', unix(1795739053)),
    ],
  },
  {
    format: 'isc',
    file: 'dhcpd.leases',
    leases: [
      // the last block of the address wins
      lease(1, '10.231.250.100', 'kitchen-pi-2', '2026-11-26T12:34:19.000Z'),
      lease(2, '10.231.250.101', 'nas', '2026-11-26T12:34:19.000Z'),
    ],
  },
  {
    format: 'kea',
    file: 'kea-leases4.csv',
    leases: [
      lease(1, '10.231.250.160', 'kitchen-pi', unix(1795699865)),
      lease(2, '10.231.250.161', 'nas', unix(1795699865)),
    ],
  },
  {
    format: 'adguard',
    file: 'leases.json',
    leases: [
      lease(1, '10.231.250.200', 'kitchen-pi', '2026-11-27T12:24:23.000Z', ''),
      lease(2, '10.231.250.201', 'nas', null, ''),
    ],
  },
];

describe('lease files of the real servers', () => {
  for (const { format, file, leases } of realFiles)
    test(`${format}: ${file}`, () => {
      const parsed = parseLeases(format, fixture(file));
      assert.equal(parsed.rejected, 0);
      assert.deepEqual(summary(parsed.leases), leases);
    });
});

const hostile = [
  { what: 'control characters', name: 'evil\u0007bell', clean: '' },
  { what: 'an escape sequence', name: '\u001b[31mred', clean: '' },
  { what: 'a 10 KB name', name: 'a'.repeat(10_240), clean: '' },
  { what: 'HTML', name: '<script>alert(1)</script>', clean: '<script>alert(1)</script>' },
  { what: 'SQL', name: "'; DROP TABLE Devices; --", clean: "'; DROP TABLE Devices; --" },
  { what: 'exactly 255 characters', name: 'b'.repeat(255), clean: 'b'.repeat(255) },
  { what: '256 characters', name: 'b'.repeat(256), clean: '' },
  { what: 'surrounding blanks', name: '  spaced ', clean: 'spaced' },
];

describe('hostile host names are stored clean or not at all', () => {
  for (const { what, name, clean } of hostile) {
    test(`cleanName: ${what}`, () => {
      assert.equal(cleanName(name), clean);
    });
    // Each format carries the name its own way; the reader must give the clean form in all.
    const escapedIsc = [...Buffer.from(name, 'utf8')]
      .map((b) =>
        b < 0x20 || b === 0x22 || b === 0x5c ? `\\${b.toString(8).padStart(3, '0')}` : String.fromCharCode(b),
      )
      .join('');
    const files: [LeaseFormat, string][] = [
      // dnsmasq names have no blanks; a name with them is not a lease line.
      ...(/\s/.test(name)
        ? []
        : [['dnsmasq', `0 aa:bb:cc:dd:ee:01 10.0.0.1 ${name} *\n`] as [LeaseFormat, string]]),
      [
        'isc',
        `lease 10.0.0.1 {\n  hardware ethernet aa:bb:cc:dd:ee:01;\n  client-hostname "${escapedIsc}";\n}\n`,
      ],
      [
        'kea',
        `address,hwaddr,client_id,valid_lifetime,expire,subnet_id,fqdn_fwd,fqdn_rev,hostname,state,user_context\n10.0.0.1,aa:bb:cc:dd:ee:01,,4000,1795699865,1,0,0,${name.replace(/,/g, '&#x2c').replace(/\n/g, '')},0,\n`,
      ],
      [
        'adguard',
        JSON.stringify({
          leases: [{ mac: 'aa:bb:cc:dd:ee:01', ip: '10.0.0.1', hostname: name, expires: '' }],
        }),
      ],
    ];
    for (const [format, text] of files)
      test(`${format}: ${what}`, () => {
        const parsed = parseLeases(format, text);
        assert.equal(parsed.leases.length, 1);
        assert.equal(parsed.leases[0]?.hostname, clean);
      });
  }
});

describe('damaged files', () => {
  test('a dnsmasq file cut mid-line keeps the whole lines, counts the cut one', () => {
    const text = fixture('dnsmasq.leases');
    const parsed = parseLeases('dnsmasq', `${text}1795739060 02:00:00:aa:0`);
    assert.equal(parsed.leases.length, 2);
    assert.equal(parsed.rejected, 1);
  });
  test('dnsmasq: DHCPv6 leases after the duid line name no MAC and are skipped', () => {
    const parsed = parseLeases(
      'dnsmasq',
      `${fixture('dnsmasq.leases')}duid 00:01:00:01:2c:aa:bb:cc:02:00:00:aa:00:09\n1795739060 12345 fd00::5 phone6 00:01:00:01\n`,
    );
    assert.equal(parsed.leases.length, 2);
    assert.equal(parsed.rejected, 0);
  });
  test('an ISC file cut inside a block keeps the blocks before it', () => {
    const text = fixture('dhcpd.leases');
    const cut = text.slice(0, text.lastIndexOf('client-hostname "kitchen-pi-2"') + 20);
    const parsed = parseLeases('isc', cut);
    assert.deepEqual(
      summary(parsed.leases).map((l) => l.hostname),
      ['kitchen-pi', 'nas'],
    );
    assert.equal(parsed.rejected, 1);
  });
  test('a Kea file cut mid-row keeps the whole rows', () => {
    const text = fixture('kea-leases4.csv');
    const parsed = parseLeases('kea', text.slice(0, text.length - 20));
    assert.equal(parsed.leases.length, 1);
    assert.equal(parsed.rejected, 1);
  });
  test('an AdGuard file cut mid-write is not understood at all (throws, the reader keeps the last good one)', () => {
    assert.throws(() => parseLeases('adguard', fixture('leases.json').slice(0, 100)));
    assert.throws(() => parseLeases('kea', 'not,a,kea,file\n'));
  });
});

describe('LeaseFiles: reads, re-reads on change, never throws', () => {
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-leases-'));
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  test('re-read when the file changes; the last good reading survives damage, missing files, binary', async () => {
    const path = join(dir, 'leases.json');
    writeFileSync(path, fixture('leases.json'));
    const files = new LeaseFiles([{ format: 'adguard', path }]);
    let snap = await files.read();
    assert.deepEqual(snap.errors, []);
    assert.equal(snap.byMac.get('02:00:00:aa:00:02')?.hostname, 'nas');

    writeFileSync(path, fixture('leases.json').replace('"nas"', '"nas-2"'));
    snap = await files.read();
    assert.equal(snap.byMac.get('02:00:00:aa:00:02')?.hostname, 'nas-2');

    writeFileSync(path, '{"leases": [ {"mac": "02:00:00');
    snap = await files.read();
    const [damaged] = snap.errors;
    assert.ok(damaged && snap.errors.length === 1);
    assert.equal(damaged.source, 'dhcp');
    assert.match(damaged.message, /leases\.json/);
    assert.equal(snap.byMac.get('02:00:00:aa:00:02')?.hostname, 'nas-2');

    writeFileSync(path, Buffer.from([0x00, 0xff, 0xfe, 0x01, 0x80, 0x00, 0x12, 0x0a]));
    snap = await files.read();
    assert.match(snap.errors[0]?.message ?? '', /binary/);
    assert.equal(snap.byMac.get('02:00:00:aa:00:02')?.hostname, 'nas-2');

    rmSync(path);
    snap = await files.read();
    assert.match(snap.errors[0]?.message ?? '', /missing/);
  });

  test('a missing file and a directory are reported per file; the other files still name', async () => {
    const good = join(dir, 'dhcp.leases');
    writeFileSync(good, fixture('dnsmasq.leases'));
    const files = new LeaseFiles([
      { format: 'dnsmasq', path: good },
      { format: 'isc', path: join(dir, 'nowhere.leases') },
      { format: 'isc', path: dir },
    ]);
    const snap = await files.read();
    assert.equal(snap.byMac.get('02:00:00:aa:00:01')?.hostname, 'kitchen-pi');
    assert.equal(snap.errors.length, 2);
    assert.match(snap.errors[0]?.message ?? '', /nowhere\.leases: missing/);
    assert.match(snap.errors[1]?.message ?? '', /not a regular file/);
  });

  test('several files: the lease with a host name wins over one without', async () => {
    const a = join(dir, 'a.leases');
    writeFileSync(a, fixture('dnsmasq.leases'));
    const b = join(dir, 'b.csv');
    writeFileSync(b, fixture('kea-leases4.csv'));
    const snap = await new LeaseFiles([
      { format: 'dnsmasq', path: a },
      { format: 'kea', path: b },
    ]).read();
    assert.equal(snap.byMac.get('02:00:00:aa:00:02')?.hostname, 'nas');
  });
});

describe('DHCP_LEASES', () => {
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-leases-config-'));
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  test('a comma list of format:path', () => {
    const config = loadConfig(
      { DHCP_LEASES: 'dnsmasq:/a/dhcp.leases, isc:/var/lib/dhcp/dhcpd.leases,kea:/k.csv,adguard:/l.json' },
      dir,
    );
    assert.deepEqual(config.DHCP_LEASES, [
      { format: 'dnsmasq', path: '/a/dhcp.leases' },
      { format: 'isc', path: '/var/lib/dhcp/dhcpd.leases' },
      { format: 'kea', path: '/k.csv' },
      { format: 'adguard', path: '/l.json' },
    ]);
  });
  for (const bad of [
    'pihole:/etc/pihole/dhcp.leases',
    'dnsmasq:dhcp.leases',
    '/var/lib/misc/dnsmasq.leases',
    'dnsmasq:',
  ])
    test(`refused: '${bad}'`, () => {
      assert.throws(
        () => loadConfig({ DHCP_LEASES: `dnsmasq:/ok.leases,${bad}` }, dir),
        (err: unknown) => err instanceof ConfigError && /^DHCP_LEASES/.test(err.message),
      );
    });
});

test('a bad DHCP_LEASES entry stops the start with exit 2 and a message naming the variable', () => {
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-leases-start-'));
  try {
    const run = runServerToExit({ DATA_DIR: dir, DHCP_LEASES: 'pihole:/etc/pihole/dhcp.leases' }, dir);
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, /DHCP_LEASES: 'pihole:\/etc\/pihole\/dhcp\.leases' must be format:path/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

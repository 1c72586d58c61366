/**
 * Probes and sites end to end, real processes in namespaces: a hub (a netkeep server) on a
 * root-side address, and two probes (netkeep with PROBE_HUB_URL and PROBE_TOKEN), each in the
 * router namespace of its own test LAN, scanning that LAN's bridge with the real arp-scan and
 * reaching the hub over the LAN's veth (the second probe through a host route to the hub's address).
 * Devices of both sites reach the hub with their site; a laptop that moves from one LAN to the
 * other belongs to the second site and is never marked gone by the first; the probe token is
 * refused by the hub everywhere but uploads; a silenced probe goes offline with one Probe Offline
 * notification at a webhook receiver on 127.0.0.1, its devices not marked Down, and Probe Online
 * when it reports again.
 *
 * Every scenario runs with the hub on SQLite, then with the hub on PostgreSQL (a private server,
 * test/helpers/postgres.ts). The hub's tables are read through store-tables.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { postgresMissing, startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { skipUnlessCi } from '../helpers/requirements.js';
import { TestServer } from '../helpers/server.js';
import { openTables, type StoreTables } from '../helpers/store-tables.js';
import { createTestLan, testLanSkipReason, type TestLan } from '../helpers/testlan.js';

const skip = testLanSkipReason('probe e2e tests');
if (skip) console.log(`# probe e2e tests skipped: ${skip}`);
const skipPostgres = skip || skipUnlessCi(postgresMissing(), 'probe e2e tests with the hub on PostgreSQL');

/** Asks `check` until it holds (bounded); whether it did. */
async function until(check: () => Promise<boolean>, attempts: number, intervalMs: number): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return check();
}

interface Site {
  lan: TestLan;
  token: string;
  probe: TestServer | undefined;
}

for (const store of ['SQLite', 'PostgreSQL'] as const)
  describe(
    `a hub on ${store} and two probes, each on its own test LAN`,
    { skip: store === 'SQLite' ? skip : skipPostgres },
    () => {
      let hub: TestServer;
      let hubBase: string;
      let receiver: Receiver;
      let pg: PostgresServer | undefined;
      /** The hub's store: `{ DATABASE_URL }` on PostgreSQL, nothing on SQLite. */
      let storeEnv: Record<string, string> = {};
      let rows: StoreTables;
      const sites: Site[] = [];

      const call = async (method: string, path: string, token: string, body?: unknown) => {
        const response = await fetch(`${hubBase}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await response.text();
        return {
          status: response.status,
          json: (text === '' ? {} : JSON.parse(text)) as Record<string, unknown>,
        };
      };
      const deviceRow = async (mac: string) =>
        (
          await rows.all(
            'SELECT "devSite", "devSyncHubNode", "devPresentLastScan" FROM "Devices" WHERE "devMac" = ?',
            [mac],
          )
        )[0] as { devSite: string; devSyncHubNode: string; devPresentLastScan: number } | undefined;
      const eventsOf = async (mac: string): Promise<string[]> =>
        (
          await rows.all('SELECT "eve_EventType" AS t FROM "Events" WHERE "eve_MAC" = ? ORDER BY rowid', [
            mac,
          ])
        ).map((r) => String(r.t));
      const notices = (type: string): number =>
        receiver.requests.filter((r) =>
          (JSON.parse(r.body) as { events: { type: string }[] }).events.some((e) => e.type === type),
        ).length;

      const startProbe = async (site: Site): Promise<TestServer> =>
        TestServer.start({
          wrapper: ['/usr/sbin/ip', 'netns', 'exec', site.lan.routerNs],
          env: {
            HOST: site.lan.gateway,
            SCAN_SUBNETS: `${site.lan.subnet}@br0`,
            SCAN_INTERVAL: '5',
            SCAN_IPV6: 'off',
            PROBE_HUB_URL: hubBase,
            PROBE_TOKEN: site.token,
          },
        });

      before(async () => {
        receiver = await startReceiver();
        if (store === 'PostgreSQL') {
          pg = await startPostgres();
          storeEnv = { DATABASE_URL: pg.url };
        }
        for (let i = 0; i < 2; i++)
          sites.push({ lan: await createTestLan({ hosts: 2, far: false }), token: '', probe: undefined });
        const [a, b] = sites as [Site, Site];
        hub = await TestServer.start({
          env: {
            HOST: a.lan.rootAddress,
            NOTIFY_WEBHOOK_URL: receiver.url('/hook'),
            PROBE_OFFLINE_MINUTES: '1',
            ...storeEnv,
          },
        });
        rows = await openTables({ dataDir: hub.dataDir, databaseUrl: storeEnv.DATABASE_URL ?? '' });
        hubBase = `http://${a.lan.rootAddress}:${hub.port}`;
        // The second LAN's router reaches the hub's address through the root side of its own veth.
        await b.lan.exec(b.lan.routerNs, [
          '/usr/sbin/ip',
          'route',
          'add',
          `${a.lan.rootAddress}/32`,
          'via',
          b.lan.rootAddress,
        ]);
        for (const [index, site] of sites.entries()) {
          const made = await call('POST', '/probes', hub.token, {
            name: `probe-${index + 1}`,
            site: `Site ${index + 1}`,
          });
          assert.equal(made.status, 200);
          site.token = String(made.json.token);
          site.probe = await startProbe(site);
        }
      });
      after(async () => {
        for (const site of sites) await site.probe?.stop();
        await rows.close();
        await hub.stop();
        await receiver.close();
        for (const site of sites) await site.lan.destroy();
        await pg?.stop();
      });

      test('devices of both sites reach the hub, each with its site and probe', async () => {
        const macs = sites.map((s) => [...s.lan.hosts.values()].map((h) => h.mac));
        assert.ok(
          await until(
            async () => (await Promise.all(macs.flat().map(deviceRow))).every((row) => row !== undefined),
            400,
            50,
          ),
          'every host of both LANs is a device at the hub',
        );
        for (const [index, group] of macs.entries())
          for (const mac of group)
            assert.deepEqual(await deviceRow(mac), {
              devSite: `Site ${index + 1}`,
              devSyncHubNode: `probe-${index + 1}`,
              devPresentLastScan: 1,
            });
        const list = await call('GET', '/probes', hub.token);
        const probes = list.json.probes as { name: string; status: string; subnets: string[] }[];
        assert.deepEqual(
          probes.map((p) => [p.name, p.status, p.subnets]),
          sites.map((s, i) => [`probe-${i + 1}`, 'online', [s.lan.subnet]]),
        );
      });

      test('the probe token is refused by the hub everywhere but uploads', async () => {
        const token = sites[0]?.token ?? '';
        for (const [method, path] of [
          ['GET', '/devices'],
          ['GET', '/probes'],
          ['GET', '/metrics'],
          ['POST', '/nettools/scan'],
        ] as const)
          assert.equal((await call(method, path, token)).status, 403, `${method} ${path}`);
      });

      test('a laptop moves from the first LAN to the second: the second site has it, the first never marks it gone', async () => {
        const [a, b] = sites as [Site, Site];
        const laptop = a.lan.hosts.get('h2');
        assert.ok(laptop);
        const mac = laptop.mac;
        await a.lan.removeHost('h2');
        await b.lan.addHost('laptop', { mac });
        // Between its last cycle on the first LAN and the second probe's first sighting, the first
        // probe may well see it gone (Disconnected: it was its device); once the second site has it,
        // the first probe's cycles leave it alone.
        assert.ok(
          await until(
            async () => {
              const row = await deviceRow(mac);
              return row?.devSite === 'Site 2' && row.devPresentLastScan === 1;
            },
            400,
            50,
          ),
          'the second site has it, present',
        );
        const lines = (): number =>
          a.probe?.logs.filter((l) => l.includes('"event":"probe-cycle"')).length ?? 0;
        const absences = async (): Promise<number> =>
          (await eventsOf(mac)).filter((t) => t === 'Disconnected' || t === 'Device Down').length;
        const before = await absences();
        const seen = lines();
        // Two more cycles of the first probe, which no longer sees it.
        assert.ok(await until(() => Promise.resolve(lines() >= seen + 2), 400, 50));
        await new Promise((resolve) => setTimeout(resolve, 500));
        const row = await deviceRow(mac);
        assert.deepEqual([row?.devSite, row?.devPresentLastScan], ['Site 2', 1]);
        assert.equal(await absences(), before, (await eventsOf(mac)).join(', '));
      });

      test('a hub outage with a kill -9 of a probe meanwhile: the spooled cycles arrive later, once each, nothing twice', async () => {
        const [, b] = sites as [Site, Site];
        const id = b.token.split('.')[0] ?? '';
        const cycles = () =>
          rows.value('SELECT COUNT(*) AS n FROM "ProbeCycles" WHERE "pcy_ProbeId" = ?', [id]).then(Number);
        const events = () => rows.value('SELECT COUNT(*) AS n FROM "Events"').then(Number);
        const port = hub.port;
        await hub.stop({ keepData: true });
        const spooled = async (): Promise<number> => {
          const response = await fetch(`http://${b.lan.gateway}:${b.probe?.port ?? 0}/nettools/scan`, {
            headers: { authorization: `Bearer ${b.probe?.token ?? ''}` },
          });
          return ((await response.json()) as { probe: { spooledCycles: number } }).probe.spooledCycles;
        };
        let held = 0;
        for (let i = 0; i < 400 && held < 2; i++) {
          held = await spooled();
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        assert.ok(held >= 2, 'two cycles spooled while the hub is away');
        await b.probe?.kill();
        const eventsBefore = await events();
        hub = await TestServer.start({
          dataDir: hub.dataDir,
          env: {
            HOST: sites[0]?.lan.rootAddress ?? '',
            PORT: String(port),
            NOTIFY_WEBHOOK_URL: receiver.url('/hook'),
            PROBE_OFFLINE_MINUTES: '1',
            ...storeEnv,
          },
        });
        const cyclesBefore = await cycles();
        b.probe = await startProbe(b);
        assert.ok(
          await until(async () => (await cycles()) >= cyclesBefore + held, 400, 50),
          'every spooled cycle arrives',
        );
        // Nothing moved on either LAN: the delayed cycles (each applied once) write no event.
        assert.equal(await events(), eventsBefore);
      });

      test('a silenced probe: one Probe Offline at the webhook, its devices not Down; Probe Online when back', async () => {
        const [a] = sites as [Site];
        const macs = [...a.lan.hosts.values()].map((h) => h.mac);
        await a.probe?.stop();
        a.probe = undefined;
        // PROBE_OFFLINE_MINUTES=1 and the watch looks every 15 s.
        assert.ok(
          await until(() => Promise.resolve(notices('Probe Offline') >= 1), 1800, 50),
          'Probe Offline delivered',
        );
        for (const mac of macs)
          assert.equal((await deviceRow(mac))?.devPresentLastScan, 1, `${mac} keeps its state`);
        for (const mac of macs) assert.ok(!(await eventsOf(mac)).includes('Device Down'));
        const status = (await call('GET', '/probes', hub.token)).json.probes as {
          name: string;
          status: string;
        }[];
        assert.equal(status.find((p) => p.name === 'probe-1')?.status, 'offline');
        a.probe = await startProbe(a);
        assert.ok(
          await until(() => Promise.resolve(notices('Probe Online') >= 1), 400, 50),
          'Probe Online delivered',
        );
        assert.equal(notices('Probe Offline'), 1, 'one Probe Offline, not one per check');
      });
    },
  );

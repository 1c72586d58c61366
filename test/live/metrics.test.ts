/**
 * GET /metrics over real HTTP: token required, Prometheus text, counters that move with the
 * requests made (labelled by route pattern, never the raw URL), tool runs by outcome, device
 * gauges equal to GET /devices' counts, and NetAlertX's names with its conditions (in process, on
 * both stores: test/helpers/stores.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InProcessServer } from '../helpers/inject.js';
import { notAuthorizedBody, TestServer } from '../helpers/server.js';
import { onEachStore } from '../helpers/stores.js';
import { openSse } from '../helpers/sse.js';

/** Sample values of a scrape: `name{labels}` (labels as printed) → value. */
function samples(text: string): Map<string, number> {
  const map = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const at = line.lastIndexOf(' ');
    map.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return map;
}

describe('GET /metrics', () => {
  let server: TestServer;
  before(async () => {
    server = await TestServer.start();
  });
  after(async () => {
    await server.stop();
  });

  async function scrape(): Promise<Map<string, number>> {
    const res = await server.request('GET', '/metrics');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    return samples(res.text);
  }

  test('needs the token', async () => {
    const res = await server.request('GET', '/metrics', { token: null });
    assert.equal(res.status, 403);
    assert.deepEqual(res.body, notAuthorizedBody);
  });

  test('request counters move with the requests made, by route pattern; default metrics are there', async () => {
    const before = await scrape();
    const key = (status: number): string =>
      `netkeep_http_requests_total{method="GET",route="/device/:mac",status="${status}"}`;
    for (const mac of ['aa:bb:cc:dd:ee:01', 'aa:bb:cc:dd:ee:02', 'aa:bb:cc:dd:ee:03'])
      assert.equal((await server.request('GET', `/device/${mac}`)).status, 404);
    await server.request('GET', '/device/aa:bb:cc:dd:ee:01', { token: null });
    const after = await scrape();
    assert.equal((after.get(key(404)) ?? 0) - (before.get(key(404)) ?? 0), 3);
    assert.equal((after.get(key(403)) ?? 0) - (before.get(key(403)) ?? 0), 1);
    const count = 'netkeep_http_request_duration_seconds_count{route="/device/:mac"}';
    assert.equal((after.get(count) ?? 0) - (before.get(count) ?? 0), 4);
    assert.ok(![...after.keys()].some((name) => name.includes('aa:bb:cc')), 'no raw URL in any label');
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
    ])
      assert.ok(after.has(name), name);
  });

  test('every route is counted, /health and unknown paths included; buckets are cumulative', async () => {
    const before = await scrape();
    assert.equal((await server.request('GET', '/health', { token: null })).status, 200);
    assert.equal((await server.request('GET', '/no/such/path')).status, 404);
    assert.equal((await server.request('GET', '/no/such/path', { token: null })).status, 403);
    const after = await scrape();
    const moved = (key: string): number => (after.get(key) ?? 0) - (before.get(key) ?? 0);
    assert.equal(moved('netkeep_http_requests_total{method="GET",route="/health",status="200"}'), 1);
    assert.equal(moved('netkeep_http_requests_total{method="GET",route="unmatched",status="404"}'), 1);
    assert.equal(moved('netkeep_http_requests_total{method="GET",route="unmatched",status="403"}'), 1);
    const histogram = 'netkeep_http_request_duration_seconds';
    for (const route of ['/health', 'unmatched', '/metrics']) {
      const buckets = [...after]
        .filter(([name]) => name.startsWith(`${histogram}_bucket{`) && name.endsWith(`route="${route}"}`))
        .map(([, value]) => value);
      assert.equal(buckets.length, 16, `${route}: 15 bounds and +Inf`);
      assert.deepEqual(
        buckets,
        [...buckets].sort((a, b) => a - b),
        `${route}: cumulative`,
      );
      assert.equal(buckets.at(-1), after.get(`${histogram}_count{route="${route}"}`), route);
      assert.ok((after.get(`${histogram}_sum{route="${route}"}`) ?? -1) >= 0, route);
    }
  });

  test('with CORS_ORIGINS, preflights are counted under the CORS route', async () => {
    const cors = await TestServer.start({ env: { CORS_ORIGINS: 'http://dash.example' } });
    try {
      const preflight = await cors.request('OPTIONS', '/devices', {
        token: null,
        headers: { origin: 'http://dash.example', 'access-control-request-method': 'GET' },
      });
      assert.equal(preflight.status, 204);
      const scraped = samples((await cors.request('GET', '/metrics')).text);
      assert.equal(scraped.get('netkeep_http_requests_total{method="OPTIONS",route="*",status="204"}'), 1);
      assert.equal(scraped.get('netkeep_http_request_duration_seconds_count{route="*"}'), 1);
    } finally {
      await cors.stop();
    }
  });

  test('tool runs by tool and outcome', async () => {
    const key = 'netkeep_tool_runs_total{tool="traceroute",outcome="ok"}';
    const before = (await scrape()).get(key) ?? 0;
    const res = await server.request('POST', '/nettools/traceroute', { body: { devLastIP: '127.0.0.1' } });
    assert.equal(res.status, 200);
    assert.equal((await scrape()).get(key), before + 1);
  });

  test('an event stream counts once, whether it ended or the client closed it', async () => {
    const tool = 'netkeep_http_requests_total{method="POST",route="/nettools/traceroute",status="200"}';
    const feed = 'netkeep_http_requests_total{method="GET",route="/stream",status="200"}';
    const before = await scrape();
    const traced = await openSse(server, 'POST', '/nettools/traceroute', {
      body: { devLastIP: '127.0.0.1' },
    });
    await traced.done;
    const live = await openSse(server, 'GET', '/stream');
    live.close();
    await live.done;
    // The server sees the client's close a moment later: scrape until it has (bounded).
    let after = await scrape();
    for (let i = 0; i < 50 && (after.get(feed) ?? 0) === (before.get(feed) ?? 0); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      after = await scrape();
    }
    assert.equal((after.get(tool) ?? 0) - (before.get(tool) ?? 0), 1);
    assert.equal((after.get(feed) ?? 0) - (before.get(feed) ?? 0), 1);
  });
});

onEachStore('GET /metrics: the device gauges', (_store, start) => {
  let server: InProcessServer;
  before(async () => {
    server = await start();
  });
  after(async () => {
    await server.stop();
  });

  async function scrape(): Promise<Map<string, number>> {
    const res = await server.request('GET', '/metrics');
    assert.equal(res.status, 200);
    return samples(res.text);
  }

  test('device gauges match GET /devices; NetAlertX totals follow its conditions', async () => {
    const devices: [string, Record<string, unknown>][] = [
      ['02:00:00:00:01:01', { devPresentLastScan: 1, devIsNew: 0 }],
      ['02:00:00:00:01:02', { devPresentLastScan: 1, devFavorite: 1, devIsNew: 0 }],
      ['02:00:00:00:01:03', { devPresentLastScan: 0, devAlertDown: 1, devIsNew: 0 }],
      ['02:00:00:00:01:04', { devPresentLastScan: 0, devAlertDown: 0 }],
      ['02:00:00:00:01:05', { devPresentLastScan: 0, devIsArchived: 1, devFavorite: 1, devIsNew: 0 }],
      ['02:00:00:00:01:06', { devPresentLastScan: 1, devIsArchived: 1, devName: 'old "nas"', devIsNew: 0 }],
    ];
    for (const [mac, fields] of devices) {
      const res = await server.request('POST', `/device/${mac}`, { body: { createNew: true, ...fields } });
      assert.equal(res.status, 200, res.text);
    }
    const metrics = await scrape();
    for (const status of ['On-line', 'Off-line', 'Down']) {
      const list = await server.request('GET', `/devices?status=${status}&limit=1`);
      assert.equal(metrics.get(`netkeep_devices{status="${status}"}`), list.json.total, status);
    }
    const all = await server.request('GET', '/devices?limit=1');
    const sum = ['On-line', 'Off-line', 'Down'].reduce(
      (n, s) => n + (metrics.get(`netkeep_devices{status="${s}"}`) ?? 0),
      0,
    );
    assert.equal(sum, all.json.total);

    assert.equal(metrics.get('netalertx_connected_devices'), 2);
    assert.equal(metrics.get('netalertx_offline_devices'), 2);
    assert.equal(metrics.get('netalertx_down_devices'), 1);
    assert.equal(metrics.get('netalertx_new_devices'), 1);
    assert.equal(metrics.get('netalertx_archived_devices'), 2);
    assert.equal(metrics.get('netalertx_favorite_devices'), 1);
    assert.equal(metrics.get('netalertx_my_devices'), 4);

    const series = [...metrics.keys()].filter((name) => name.startsWith('netalertx_device_status{'));
    assert.equal(series.length, devices.length);
    const status = (mac: string): string | undefined =>
      /device_status="([^"]+)"/.exec(series.find((s) => s.includes(`mac="${mac}"`)) ?? '')?.[1];
    assert.equal(status('02:00:00:00:01:01'), 'Online');
    assert.equal(status('02:00:00:00:01:03'), 'Down');
    assert.equal(status('02:00:00:00:01:04'), 'New');
    assert.equal(status('02:00:00:00:01:05'), 'Archived');
    assert.equal(status('02:00:00:00:01:06'), 'Online');
    const nas = series.find((s) => s.includes('mac="02:00:00:00:01:06"')) ?? '';
    assert.match(
      nas,
      /^netalertx_device_status\{device="old \\"nas\\"",mac="02:00:00:00:01:06",ip="",vendor="",first_connection="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d",last_connection="[^"]*",dev_type="",device_status="Online"\}$/,
    );
  });
});

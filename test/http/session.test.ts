/**
 * Console sessions and the CSRF rule at the HTTP level, against the real server: sign-in, the
 * cookie's flags, the cookie authorising reads, writes needing this server's own Origin, sign-out,
 * the bearer header unaffected, the sign-in rate limit; and the console's static serving (shell,
 * assets, caching, compression, CSP) and the /docs CSP.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { loadConfig } from '../../src/config.js';
import { SessionStore, SignInLimiter, sessionIdFrom } from '../../src/http/session.js';
import { notAuthorizedBody, TestServer } from '../helpers/server.js';

const mac = '02:c0:00:00:00:01';

async function signIn(server: TestServer, token = server.token, headers: Record<string, string> = {}) {
  return server.request('POST', '/session', { token: null, body: { token }, headers });
}

function cookieOf(setCookie: string | null): string {
  assert.ok(setCookie, 'a Set-Cookie header');
  const pair = setCookie.split(';', 1)[0] ?? '';
  return pair;
}

describe('console session', () => {
  let server: TestServer;
  let cookie: string;
  let origin: string;
  before(async () => {
    server = await TestServer.start();
    origin = server.url;
    const res = await server.request('POST', `/device/${mac}`, { body: { createNew: true, devName: 'one' } });
    assert.equal(res.status, 200, res.text);
  });
  after(async () => {
    await server.stop();
  });

  test('a wrong token is refused with 403, says so, and sets no cookie', async () => {
    for (const token of ['wrong', '', `${server.token}x`, server.token.toUpperCase()]) {
      const res = await signIn(server, token);
      assert.equal(res.status, 403, token);
      assert.equal(res.json.success, false);
      assert.match(String(res.json.message), /token is not correct/);
      assert.equal(res.json.code, 'WRONG_TOKEN');
      assert.equal(res.headers.get('set-cookie'), null);
    }
    const bad = await server.request('POST', '/session', { token: null, body: { token: 5 } });
    assert.equal(bad.status, 400);
    assert.match(String(bad.json.message), /token/);
  });

  test('the right token gives an HttpOnly, SameSite=Strict session cookie that is not the token', async () => {
    const res = await signIn(server);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { success: true });
    const setCookie = res.headers.get('set-cookie') ?? '';
    assert.match(setCookie, /^netkeep_session=[A-Za-z0-9_-]{43}; /);
    assert.match(setCookie, /; HttpOnly/);
    assert.match(setCookie, /; SameSite=Strict/);
    assert.match(setCookie, /; Path=\//);
    assert.match(setCookie, /; Max-Age=\d+/);
    assert.doesNotMatch(setCookie, /Secure/, 'not Secure over plain http (the browser would drop it)');
    assert.ok(!setCookie.includes(server.token), 'the token is not in the cookie');
    cookie = cookieOf(setCookie);
    const second = cookieOf((await signIn(server)).headers.get('set-cookie'));
    assert.notEqual(second, cookie, 'each sign-in gets a fresh random session id');
  });

  test('the cookie alone authorises reads, any Origin or none', async () => {
    for (const headers of [{}, { origin: 'http://evil.example' }] as Record<string, string>[]) {
      const res = await server.request('GET', '/devices', { token: null, headers: { cookie, ...headers } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.total, 1);
    }
    const totals = await server.request('GET', '/devices/totals', { token: null, headers: { cookie } });
    assert.deepEqual(totals.body, [1, 0, 0, 1, 0, 0]);
  });

  test('a write with only the cookie needs this server’s own Origin; otherwise 403 and nothing changes', async () => {
    const attempts: [string, Record<string, string>][] = [
      ['no Origin', {}],
      ['Origin null', { origin: 'null' }],
      ['a foreign Origin', { origin: 'http://evil.example' }],
      ['another port', { origin: `http://127.0.0.1:${server.port + 1}` }],
      ['another host name', { origin: `http://localhost:${server.port}` }],
      ['a non-http scheme', { origin: `ftp://127.0.0.1:${server.port}` }],
      ['a path smuggled in', { origin: `${origin}/x` }],
    ];
    for (const [what, headers] of attempts) {
      const res = await server.request('POST', `/device/${mac}`, {
        token: null,
        body: { devName: 'hacked' },
        headers: { cookie, ...headers },
      });
      assert.equal(res.status, 403, `${what}: ${res.text}`);
      assert.match(String(res.json.message), /own pages \(Origin\)/, what);
      assert.equal(res.json.code, 'ORIGIN_REQUIRED', what);
      const del = await server.request('DELETE', `/device/${mac}/delete`, {
        token: null,
        headers: { cookie, ...headers },
      });
      assert.equal(del.status, 403, `${what} (DELETE)`);
    }
    const device = await server.request('GET', `/device/${mac}`);
    assert.equal(device.json.devName, 'one', 'unchanged');

    const ok = await server.request('POST', `/device/${mac}`, {
      token: null,
      body: { devName: 'renamed' },
      headers: { cookie, origin },
    });
    assert.equal(ok.status, 200, ok.text);
    assert.equal((await server.request('GET', `/device/${mac}`)).json.devName, 'renamed');
  });

  test('the bearer header is unaffected: writes need no Origin, and a foreign one does not matter', async () => {
    for (const headers of [{}, { origin: 'http://evil.example' }] as Record<string, string>[]) {
      const res = await server.request('POST', `/device/${mac}`, { body: { devOwner: 'me' }, headers });
      assert.equal(res.status, 200, res.text);
    }
  });

  test('a made-up or malformed cookie authorises nothing', async () => {
    for (const value of [
      'netkeep_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      'netkeep_session=',
      `netkeep_session=${server.token}`,
      'other=1',
    ]) {
      const res = await server.request('GET', '/devices', { token: null, headers: { cookie: value } });
      assert.equal(res.status, 403, value);
      assert.deepEqual(res.body, notAuthorizedBody);
    }
  });

  test('sign-in from a foreign Origin is refused; from our own it works', async () => {
    const foreign = await signIn(server, server.token, { origin: 'http://evil.example' });
    assert.equal(foreign.status, 403);
    assert.equal(foreign.json.code, 'FOREIGN_ORIGIN');
    assert.equal(foreign.headers.get('set-cookie'), null);
    const own = await signIn(server, server.token, { origin });
    assert.equal(own.status, 200);
  });

  test('DELETE /session signs out: the cookie is cleared and no longer works', async () => {
    const fresh = cookieOf((await signIn(server)).headers.get('set-cookie'));
    const foreign = await server.request('DELETE', '/session', {
      token: null,
      headers: { cookie: fresh, origin: `http://127.0.0.1:${server.port + 1}` },
    });
    assert.equal(foreign.status, 403, 'another origin cannot sign the browser out');
    assert.equal(foreign.json.code, 'FOREIGN_ORIGIN');
    const out = await server.request('DELETE', '/session', {
      token: null,
      headers: { cookie: fresh, origin },
    });
    assert.equal(out.status, 200);
    assert.match(out.headers.get('set-cookie') ?? '', /^netkeep_session=; .*Max-Age=0/);
    const res = await server.request('GET', '/devices', { token: null, headers: { cookie: fresh } });
    assert.equal(res.status, 403);
    // The other session is untouched.
    assert.equal((await server.request('GET', '/devices', { token: null, headers: { cookie } })).status, 200);
  });

  test('the shell and assets need no token; / redirects; deep links answer the shell', async () => {
    const home = await fetch(`${server.url}/`, { redirect: 'manual' });
    assert.equal(home.status, 302);
    assert.equal(home.headers.get('location'), '/ui/');
    for (const path of ['/ui/', `/ui/devices/${mac}`, '/ui/events?type=Connected', '/ui/no/such/page']) {
      const res = await server.request('GET', path, { token: null });
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      assert.equal(res.headers.get('cache-control'), 'no-cache');
      assert.match(res.text, /<div id="app">/);
    }
    const shell = (await server.request('GET', '/ui/', { token: null })).text;
    const assets = [...shell.matchAll(/\/ui\/assets\/([^"]+)/g)].map((m) => m[1] ?? '');
    assert.equal(assets.length, 2, 'one script and one stylesheet');
    for (const name of assets) {
      assert.match(name, /^main-[A-Z0-9]{8}\.(js|css)$/, 'named by content hash');
      const plain = await fetch(`${server.url}/ui/assets/${name}`, {
        headers: { 'accept-encoding': 'identity' },
      });
      const body = Buffer.from(await plain.arrayBuffer());
      assert.equal(plain.status, 200);
      assert.equal(plain.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.equal(plain.headers.get('content-encoding'), null);
      assert.equal(plain.headers.get('vary'), 'Accept-Encoding');
      // fetch() would decode the body itself: read the raw bytes through node:http semantics instead.
      const raw = async (encoding: string) => {
        const { request } = await import('node:http');
        return new Promise<{ headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
          const req = request(
            `${server.url}/ui/assets/${name}`,
            { headers: { 'accept-encoding': encoding } },
            (res) => {
              const chunks: Buffer[] = [];
              res.on('data', (c: Buffer) => chunks.push(c));
              res.on('end', () => {
                resolve({ headers: res.headers, body: Buffer.concat(chunks) });
              });
            },
          );
          req.on('error', reject);
          req.end();
        });
      };
      const br = await raw('gzip, deflate, br');
      assert.equal(br.headers['content-encoding'], 'br');
      assert.ok(brotliDecompressSync(br.body).equals(body));
      assert.ok(br.body.length < body.length);
      const gz = await raw('gzip');
      assert.equal(gz.headers['content-encoding'], 'gzip');
      assert.ok(gunzipSync(gz.body).equals(body));
      const refused = await raw('br;q=0, gzip;q=0');
      assert.equal(refused.headers['content-encoding'], undefined);
    }
    const missing = await server.request('GET', '/ui/assets/nothing-here.js', { token: null });
    assert.equal(missing.status, 404);
    const etag = (await fetch(`${server.url}/ui/`)).headers.get('etag') ?? '';
    const revalidated = await fetch(`${server.url}/ui/`, { headers: { 'if-none-match': etag } });
    assert.equal(revalidated.status, 304);
  });

  test('the console and /docs send a self-only CSP without upgrade-insecure-requests', async () => {
    const docsPage = await fetch(`${server.url}/docs`, { redirect: 'follow' });
    await docsPage.arrayBuffer();
    for (const path of ['/ui/', '/docs', '/docs/static/index.html', '/docs/static/swagger-ui.css']) {
      const res = await fetch(`${server.url}${path}`);
      await res.arrayBuffer();
      assert.equal(res.status, 200, path);
      const csp = res.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'self'/, path);
      assert.doesNotMatch(csp, /upgrade-insecure-requests/i, path);
    }
  });

  test('wrong tokens are rate-limited: 429 with Retry-After; the right token still signs in', async () => {
    let limited: Awaited<ReturnType<typeof signIn>> | undefined;
    for (let i = 0; i < 15 && limited === undefined; i++) {
      const res = await signIn(server, `wrong-${i}`);
      if (res.status === 429) limited = res;
      else assert.equal(res.status, 403);
    }
    assert.ok(limited, 'a 429 after some wrong tokens');
    assert.equal(limited.json.code, 'SIGN_IN_RATE_LIMITED');
    assert.match(limited.headers.get('retry-after') ?? '', /^\d+$/);
    // Whoever shares the guesser's address (everyone behind one proxy) is not locked out.
    const right = await signIn(server);
    assert.equal(right.status, 200, right.text);
    assert.match(right.headers.get('set-cookie') ?? '', /^netkeep_session=/);
    assert.equal((await signIn(server, 'wrong-again')).status, 429);
    // The bearer header is not part of sign-in and keeps working.
    assert.equal((await server.request('GET', '/devices')).status, 200);
  });
});

describe('session store and limiter (unit)', () => {
  test('sessions expire, end, and are read only from a well-formed cookie', () => {
    let now = 1_000;
    const store = new SessionStore(() => now);
    const id = store.create();
    assert.equal(store.isValid(`a=b; netkeep_session=${id}`), true);
    assert.equal(sessionIdFrom(`netkeep_session=${id}x`), undefined);
    now += 8 * 24 * 3600_000;
    assert.equal(store.isValid(`netkeep_session=${id}`), false);
    const other = store.create();
    store.end(`netkeep_session=${other}`);
    assert.equal(store.isValid(`netkeep_session=${other}`), false);
  });

  test('the limiter forgets a client after its window', () => {
    let now = 0;
    const limiter = new SignInLimiter(() => now);
    for (let i = 0; i < 10; i++) limiter.recordFailure('203.0.113.4');
    assert.ok(limiter.retryAfter('203.0.113.4') > 0);
    assert.equal(limiter.retryAfter('203.0.113.8'), 0);
    now += 5 * 60_000 + 1;
    assert.equal(limiter.retryAfter('203.0.113.4'), 0);
  });

  test('the limiter throttles failures from all addresses together, and tracks a bounded number', () => {
    let now = 0;
    const limits = { perAddress: 3, global: 20, windowMs: 60_000, trackedAddresses: 8 };
    const limiter = new SignInLimiter(() => now, limits);
    for (let i = 0; i < 19; i++) limiter.recordFailure(`198.51.100.${i}`);
    assert.equal(limiter.retryAfter('192.0.2.1'), 0, 'under the global limit');
    assert.ok(limiter.tracked <= 8, `${limiter.tracked} addresses tracked`);
    limiter.recordFailure('198.51.100.200');
    assert.equal(limiter.retryAfter('192.0.2.1'), 60, 'a new address is throttled past the global limit');
    now += 60_001;
    assert.equal(limiter.retryAfter('192.0.2.1'), 0, 'the global window ended');
    for (let i = 0; i < 10_000; i++) limiter.recordFailure(`10.${i >> 8}.${i & 255}.1`);
    assert.ok(limiter.tracked <= 8, `${limiter.tracked} addresses tracked after 10,000`);
  });
});

describe('tool routes authorised by the cookie need this server’s own page, whatever the method', () => {
  let standIn: Server;
  /** Requests the stand-in (ipinfo.io and the speed-test server in one) has received. */
  const hits: string[] = [];
  let server: TestServer;
  let cookie: string;

  before(async () => {
    const block = Buffer.alloc(64 * 1024, 0x61);
    standIn = createServer((req, res) => {
      hits.push(`${req.method} ${req.url}`);
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/json') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ ip: '203.0.113.7', city: 'Zürich', country: 'CH', org: 'AS64500' }));
      } else if (url.pathname === '/__down') {
        let left = Math.min(Number(url.searchParams.get('bytes')) || 0, 4 * 1024 * 1024);
        res.writeHead(200, { 'content-length': left });
        while (left > 0) {
          const piece = block.subarray(0, Math.min(left, block.length));
          left -= piece.length;
          res.write(piece);
        }
        res.end();
      } else req.resume().on('end', () => res.end('ok'));
    });
    await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve));
    const address = standIn.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    server = await TestServer.start({
      env: {
        INTERNETINFO_URL: `http://127.0.0.1:${port}/json`,
        SPEEDTEST_SERVER_URL: `http://127.0.0.1:${port}`,
        SPEEDTEST_DURATION_MS: '500',
        SPEEDTEST_STREAMS: '1',
      },
    });
    cookie = cookieOf((await signIn(server)).headers.get('set-cookie'));
  });
  after(async () => {
    await server.stop();
    standIn.closeAllConnections();
    await new Promise((resolve) => standIn.close(resolve));
  });

  const toolGets: [string, Record<string, string>][] = [
    ['/nettools/speedtest', {}],
    ['/nettools/speedtest', { accept: 'text/event-stream' }],
    ['/nettools/internetinfo', {}],
  ];
  // GETs that change something without a tool reaching the stand-in: NetAlertX's trigger-scan
  // starts a cycle (this server scans nothing, so from its own page the answer is a 409).
  const sideEffectGets: [string, Record<string, string>][] = [...toolGets, ['/nettools/trigger-scan', {}]];

  test('every GET under /nettools that runs something is among those checked here', async () => {
    const paths = (await server.request('GET', '/openapi.json')).json.paths as Record<
      string,
      Record<string, unknown>
    >;
    const gets = Object.keys(paths).filter(
      (path) => path.startsWith('/nettools/') && 'get' in (paths[path] ?? {}),
    );
    // GET /nettools/scan only reads the scanner's status, /nettools/interfaces the host's addresses,
    // /nettools/dhcp-watch the last DHCP watch.
    const readOnly = new Set(['/nettools/scan', '/nettools/interfaces', '/nettools/dhcp-watch']);
    assert.deepEqual(
      gets.filter((path) => !readOnly.has(path)).sort(),
      [...new Set(sideEffectGets.map(([path]) => path))].sort(),
    );
  });

  test('a cookie-only GET from another page of the site (another port) runs nothing: 403', async () => {
    const attempts: [string, Record<string, string>][] = [
      ['no Origin, no Sec-Fetch-Site', {}],
      ['same-site (another port)', { 'sec-fetch-site': 'same-site' }],
      ['cross-site', { 'sec-fetch-site': 'cross-site' }],
      [
        'another port as Origin',
        { origin: `http://127.0.0.1:${server.port + 1}`, 'sec-fetch-site': 'same-site' },
      ],
      ['a foreign Origin', { origin: 'http://evil.example' }],
    ];
    for (const [path, extra] of sideEffectGets)
      for (const [what, headers] of attempts) {
        const res = await server.request('GET', path, {
          token: null,
          headers: { cookie, ...extra, ...headers },
        });
        assert.equal(res.status, 403, `${path} ${what}: ${res.text}`);
        assert.equal(res.json.code, 'ORIGIN_REQUIRED', `${path} ${what}`);
      }
    // HEAD runs the GET handler too.
    for (const [path] of sideEffectGets) {
      const res = await server.request('HEAD', path, { token: null, headers: { cookie } });
      assert.equal(res.status, 403, `HEAD ${path}`);
    }
    assert.deepEqual(hits, [], 'no tool ran');
  });

  test('from the console’s own page (Sec-Fetch-Site: same-origin, or its Origin) the tools run', async () => {
    for (const [path, extra] of toolGets)
      for (const headers of [{ 'sec-fetch-site': 'same-origin' }, { origin: server.url }] as Record<
        string,
        string
      >[]) {
        hits.length = 0;
        const res = await server.request('GET', path, {
          token: null,
          headers: { cookie, ...extra, ...headers },
        });
        assert.equal(res.status, 200, `${path} ${JSON.stringify(headers)}: ${res.text}`);
        assert.ok(hits.length > 0, `${path} ran the tool`);
      }
    const trigger = await server.request('GET', '/nettools/trigger-scan', {
      token: null,
      headers: { cookie, 'sec-fetch-site': 'same-origin' },
    });
    assert.deepEqual([trigger.status, trigger.json.code], [409, 'SCAN_NOT_CONFIGURED'], trigger.text);
    // Reads that run nothing still need no Origin.
    const status = await server.request('GET', '/nettools/scan', { token: null, headers: { cookie } });
    assert.equal(status.status, 200, status.text);
  });
});

describe('TRUST_PROXY: X-Forwarded-Proto and -For believed only from a trusted proxy', () => {
  /** The client address in the request log line of the last sign-in. */
  const loggedClient = async (server: TestServer): Promise<string | undefined> => {
    await server.logsCaughtUp();
    const lines = server.logs.filter((l) => l.includes('"msg":"request"') && l.includes('"url":"/session"'));
    const line = lines.at(-1);
    return line === undefined ? undefined : (JSON.parse(line) as { client?: string }).client;
  };
  /** Signs in wrongly from `address` (as X-Forwarded-For says) until a 429; the number of 403s before. */
  const wrongUntilLimited = async (server: TestServer, address: string): Promise<number> => {
    let refused = 0;
    for (let i = 0; i < 15; i++) {
      const res = await signIn(server, `wrong-${i}`, { 'x-forwarded-for': address });
      if (res.status === 429) return refused;
      assert.equal(res.status, 403, res.text);
      refused++;
    }
    return refused;
  };
  const viaProxy = { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.9' };
  /** A console page served through the proxy at https://netkeep.example. */
  const proxiedPage = {
    ...viaProxy,
    'x-forwarded-host': 'netkeep.example',
    origin: 'https://netkeep.example',
  };

  for (const [what, env] of [
    ['off (the default)', {}],
    ['a list that does not hold the client', { TRUST_PROXY: '10.0.0.0/8,192.0.2.1' }],
  ] as const)
    test(`${what}: a client's X-Forwarded-* headers are ignored`, async () => {
      const server = await TestServer.start({ env });
      try {
        const res = await signIn(server, server.token, viaProxy);
        assert.equal(res.status, 200, res.text);
        assert.doesNotMatch(res.headers.get('set-cookie') ?? '', /Secure/, 'a forged https is not believed');
        assert.equal(await loggedClient(server), '127.0.0.1');
        // Wrong tokens count against the real address, whatever address the header names.
        let refused = 0;
        for (let i = 0; i < 15; i++) {
          const res2 = await signIn(server, `wrong-${i}`, { 'x-forwarded-for': `198.51.100.${i}` });
          if (res2.status === 429) break;
          refused++;
        }
        assert.equal(refused, 10, 'the 11th wrong token from 127.0.0.1 is throttled');
        // A forged X-Forwarded-Host does not make a foreign Origin this server's own.
        const write = await server.request('POST', '/device/02:c0:00:00:00:09', {
          token: null,
          body: { createNew: true },
          headers: { cookie: cookieOf(res.headers.get('set-cookie')), ...proxiedPage },
        });
        assert.equal(write.status, 403, write.text);
      } finally {
        await server.stop();
      }
    });

  for (const [what, value] of [
    ['a list with the proxy', '192.0.2.1, 127.0.0.1'],
    ['a CIDR with the proxy', '127.0.0.0/8'],
    ['on', 'on'],
  ] as const)
    test(`${what}: the proxy's X-Forwarded-Proto gives a Secure cookie, X-Forwarded-For the client`, async () => {
      const server = await TestServer.start({ env: { TRUST_PROXY: value } });
      try {
        const res = await signIn(server, server.token, viaProxy);
        assert.equal(res.status, 200, res.text);
        assert.match(res.headers.get('set-cookie') ?? '', /; Secure/);
        assert.equal(await loggedClient(server), '203.0.113.9');
        const plain = await signIn(server, server.token, { 'x-forwarded-proto': 'http' });
        assert.doesNotMatch(plain.headers.get('set-cookie') ?? '', /Secure/);
        // The browser's Origin is the proxy's host (X-Forwarded-Host), not the Host netkeep sees.
        const write = await server.request('POST', '/device/02:c0:00:00:00:09', {
          token: null,
          body: { createNew: true },
          headers: { cookie: cookieOf(res.headers.get('set-cookie')), ...proxiedPage },
        });
        assert.equal(write.status, 200, write.text);
        // The throttle counts each client behind the proxy on its own.
        assert.equal(await wrongUntilLimited(server, '203.0.113.1'), 10);
        assert.equal(await wrongUntilLimited(server, '203.0.113.2'), 10, 'another client is not throttled');
      } finally {
        await server.stop();
      }
    });

  test('a malformed TRUST_PROXY stops the server at start naming the variable', () => {
    assert.throws(
      () => loadConfig({ TRUST_PROXY: 'yes' }, '/nonexistent'),
      /TRUST_PROXY: 'yes' is not an IP/,
    );
    assert.throws(() => loadConfig({ TRUST_PROXY: '10.0.0.0/33' }, '/nonexistent'), /TRUST_PROXY/);
    assert.deepEqual(loadConfig({ TRUST_PROXY: 'loopback, 10.1.0.0/16' }, '/nonexistent').TRUST_PROXY, [
      'loopback',
      '10.1.0.0/16',
    ]);
    assert.equal(loadConfig({}, '/nonexistent').TRUST_PROXY, false);
  });
});

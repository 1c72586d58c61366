/** internetinfo against a local HTTP stand-in for ipinfo.io whose behaviour each test picks. */
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { TestServer } from '../helpers/server.js';

type Behaviour = (res: ServerResponse) => void;

describe('GET /nettools/internetinfo', () => {
  let standIn: Server;
  let behaviour: Behaviour = (res) => res.end();
  const hanging: ServerResponse[] = [];
  let server: TestServer;

  before(async () => {
    standIn = createServer((_req, res) => {
      behaviour(res);
    });
    await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve));
    const address = standIn.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    server = await TestServer.start({
      env: { INTERNETINFO_URL: `http://127.0.0.1:${port}/json`, INTERNETINFO_TIMEOUT_MS: '2000' },
    });
  });
  after(async () => {
    await server.stop();
    for (const res of hanging) res.destroy();
    standIn.closeAllConnections();
    await new Promise((resolve) => standIn.close(resolve));
  });

  test('a normal answer: one summary line and the parsed object', async () => {
    const info = {
      ip: '203.0.113.7',
      city: 'Zürich',
      region: 'Zurich',
      country: 'CH',
      org: 'AS64500 Example Net',
    };
    behaviour = (res) => {
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.end(JSON.stringify(info));
    };
    const res = await server.request('GET', '/nettools/internetinfo');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      success: true,
      output: 'IP: 203.0.113.7, City: Zürich, Country: CH, Org: AS64500 Example Net',
      info,
    });
  });

  test('failures are 500 with a message saying what went wrong', async () => {
    const cases: [string, Behaviour, RegExp][] = [
      ['empty body', (res) => res.end(), /empty/],
      [
        'HTTP 429',
        (res) => {
          res.statusCode = 429;
          res.end('{"error":"rate limited"}');
        },
        /HTTP 429/,
      ],
      [
        'HTTP 500',
        (res) => {
          res.statusCode = 500;
          res.end();
        },
        /HTTP 500/,
      ],
      ['invalid JSON', (res) => res.end('<html>not json</html>'), /not answer with JSON/],
      ['JSON that is not an object', (res) => res.end('[1,2]'), /non-object/],
      [
        'hang',
        (res) => {
          hanging.push(res);
        },
        /timed out/,
      ],
    ];
    for (const [name, handler, message] of cases) {
      behaviour = handler;
      const res = await server.request('GET', '/nettools/internetinfo');
      assert.equal(res.status, 500, name);
      assert.equal(res.json.success, false);
      assert.equal(res.json.error, 'Request failed', name);
      assert.match(String(res.json.message), message, name);
    }
  });

  test('a service that cannot be reached is 500', async () => {
    const down = await TestServer.start({ env: { INTERNETINFO_URL: 'http://127.0.0.1:9/json' } });
    try {
      const res = await down.request('GET', '/nettools/internetinfo');
      assert.equal(res.status, 500);
      assert.match(String(res.json.message), /could not be reached/);
      assert.match(String(res.json.details), /ECONNREFUSED|bad port/);
    } finally {
      await down.stop();
    }
  });
});

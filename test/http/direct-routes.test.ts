/**
 * Direct routes (src/http/direct-routes.ts): a route called as a function of its body answers
 * exactly what the route answers over HTTP (status and bytes), validated by the route's own
 * compiled schema (a schema shared in the route's plugin included), with the route's own 400
 * reasons; a route that cannot be called so is refused when it is added.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Type, type Static } from '@sinclair/typebox';
import { DomainError } from '../../src/errors.js';
import { buildApp, type App } from '../../src/http/app.js';
import { directRoute } from '../../src/http/direct-routes.js';

const token = 'direct-token-0123456789abcdef';

const Thing = Type.Object(
  { size: Type.Integer({ minimum: 1 }) },
  { $id: 'Thing', additionalProperties: false },
);
const EchoBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 8 }), thing: Type.Optional(Type.Ref('Thing')) },
  { additionalProperties: false },
);

async function appWith(register: (app: App) => void): Promise<App> {
  const app = await buildApp({ token, bodyLimit: 65_536, logger: false, surface: 'minimal' });
  await app.register(async (plugin: App) => {
    // A schema of the plugin's own: the direct call must validate with it too.
    plugin.addSchema(Thing);
    register(plugin);
  });
  await app.ready();
  return app;
}

const echo = directRoute(async (body: Static<typeof EchoBody>) => {
  if (body.name === 'nobody') throw new DomainError('not-found', 'No such name.', { code: 'NO_NAME' });
  if (body.name === 'boom') throw new Error('a bug');
  return { status: 201, type: 'application/json; charset=utf-8', body: Buffer.from(JSON.stringify(body)) };
});

describe('direct routes', () => {
  test("a direct call answers the route's status and bytes, its 400 reasons included", async () => {
    const app = await appWith((plugin) => {
      plugin.post('/echo', { config: echo.config, schema: { body: EchoBody } }, echo.handler);
    });
    try {
      const run = app.directRoutes.find('POST', '/echo');
      assert.ok(run);
      const bodies: unknown[] = [
        { name: 'ada' },
        { name: 'ada', thing: { size: 3 } },
        { name: 'ada', thing: { size: 0 } },
        { name: 'ada', thing: { size: 1, colour: 'red' } },
        { name: 5 },
        { name: '' },
        { name: 'x'.repeat(9) },
        { name: 'ada', extra: true },
        {},
        [],
        'text',
        { name: 'nobody' },
      ];
      for (const body of bodies) {
        const http = await app.inject({
          method: 'POST',
          url: '/echo',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          payload: JSON.stringify(body),
        });
        const direct = await run(body);
        assert.deepEqual(
          [direct.status, direct.body.toString()],
          [http.statusCode, http.body],
          JSON.stringify(body),
        );
        assert.equal(direct.unexpected, undefined);
      }
      // A bug is the route's 500, and handed back to be logged.
      const bug = await run({ name: 'boom' });
      assert.equal(bug.status, 500);
      assert.ok(bug.unexpected instanceof Error);
      // Not a direct route, or no route at all: nothing to call.
      assert.equal(app.directRoutes.find('GET', '/health'), undefined);
      assert.equal(app.directRoutes.find('POST', '/nowhere'), undefined);
    } finally {
      await app.close();
    }
  });

  test('a route with path parameters, a query schema or hooks of its own cannot be direct; header names in lower case', async () => {
    const refused: [string, (app: App) => void][] = [
      [
        'path parameter',
        (plugin) =>
          plugin.post('/echo/:id', { config: echo.config, schema: { body: EchoBody } }, echo.handler),
      ],
      [
        'query schema',
        (plugin) =>
          plugin.post(
            '/echo',
            { config: echo.config, schema: { body: EchoBody, querystring: Type.Object({}) } },
            echo.handler,
          ),
      ],
      [
        'preValidation hook',
        (plugin) =>
          plugin.post(
            '/echo',
            {
              config: echo.config,
              schema: { body: EchoBody },
              preValidation: async () => undefined,
            },
            echo.handler,
          ),
      ],
    ];
    for (const [what, register] of refused)
      await assert.rejects(appWith(register), /a direct route takes a body only/, what);
    // Any route: Fastify no longer lower-cases a header schema's names (the compiler is wrapped).
    await assert.rejects(
      appWith((plugin) => {
        plugin.get(
          '/h',
          { schema: { headers: Type.Object({ 'Last-Event-ID': Type.String() }) } },
          async () => 'ok',
        );
      }),
      /in lower case/,
    );
  });

  test('a direct route without a body schema is never called unvalidated', async () => {
    const loose = directRoute(async (body: unknown) => ({
      status: 200,
      type: 'application/json',
      body: JSON.stringify(body),
    }));
    const app = await appWith((plugin) => {
      plugin.post('/echo', { config: loose.config }, loose.handler);
    });
    try {
      assert.throws(() => app.directRoutes.find('POST', '/echo'), /no compiled body validator/);
    } finally {
      await app.close();
    }
  });
});

/**
 * Serves the web console: `/` redirects to `/ui/`, every path under `/ui/` answers the one HTML
 * shell (the page's own script reads the path, so a deep link reloads the same page), and
 * `/ui/assets/<name>-<hash>.<ext>` the built script and styles. No token is needed: none of this
 * holds data; the page asks the API for everything, with the session cookie.
 *
 * The build (scripts/build-console.mjs) writes each file with a `.br` and a `.gz` copy beside it;
 * they are read once at start and answered by Accept-Encoding. Asset names carry a content hash,
 * so they are cached for a year; the shell is revalidated every time (ETag), so a new build is seen
 * at once.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from './app.js';
import { ApiError } from './errors.js';

/**
 * The console's policy: everything from this server only. No upgrade-insecure-requests: netkeep is
 * usually reached over plain http by a LAN name or address, where that directive would blank the
 * page.
 */
export const consoleCsp =
  "default-src 'self'; base-uri 'self'; object-src 'none'; frame-ancestors 'none'; form-action 'self'";

/** Where `npm run build` puts the console: dist/console (this module is dist/src/http/console.js). */
export const defaultConsoleDir = fileURLToPath(new URL('../../console/', import.meta.url));

export interface ConsoleRoutesOptions {
  /** Directory holding index.html and assets/ (default: the build output). */
  readonly dir?: string;
}

interface StaticFile {
  readonly type: string;
  readonly identity: Buffer;
  readonly gzip?: Buffer;
  readonly br?: Buffer;
  readonly etag: string;
}

const contentTypes: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
};

function load(path: string): StaticFile {
  const optional = (suffix: string): Buffer | undefined =>
    existsSync(path + suffix) ? readFileSync(path + suffix) : undefined;
  const identity = readFileSync(path);
  return {
    type: contentTypes[extname(path)] ?? 'application/octet-stream',
    identity,
    gzip: optional('.gz'),
    br: optional('.br'),
    etag: `"${createHash('sha256').update(identity).digest('base64url').slice(0, 27)}"`,
  };
}

/** Accepts `br` / `gzip` unless the client gave it q=0. */
function accepts(header: string | undefined, coding: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((part) => {
    const [name, ...params] = part.trim().split(';');
    if (name?.trim().toLowerCase() !== coding) return false;
    const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    return q === undefined || Number(q) > 0;
  });
}

function send(request: FastifyRequest, reply: FastifyReply, file: StaticFile, cacheControl: string) {
  void reply
    .header('Content-Type', file.type)
    .header('Cache-Control', cacheControl)
    .header('Content-Security-Policy', consoleCsp)
    .header('X-Content-Type-Options', 'nosniff')
    .header('Referrer-Policy', 'no-referrer')
    .header('Vary', 'Accept-Encoding')
    .header('ETag', file.etag);
  if (request.headers['if-none-match'] === file.etag) return reply.code(304).send();
  const encoding = request.headers['accept-encoding'];
  if (file.br && accepts(encoding, 'br')) return reply.header('Content-Encoding', 'br').send(file.br);
  if (file.gzip && accepts(encoding, 'gzip')) return reply.header('Content-Encoding', 'gzip').send(file.gzip);
  return reply.send(file.identity);
}

export default async function consoleRoutes(app: App, opts: ConsoleRoutesOptions): Promise<void> {
  const dir = opts.dir ?? defaultConsoleDir;
  const shellPath = join(dir, 'index.html');
  const built = existsSync(shellPath);
  if (!built) app.log.warn({ dir }, 'the web console is not built; /ui/ answers 503 (npm start builds it)');
  const shell = built ? load(shellPath) : undefined;
  const assetsDir = join(dir, 'assets');
  const assets = new Map<string, StaticFile>();
  if (built && existsSync(assetsDir))
    for (const name of readdirSync(assetsDir))
      if (!name.endsWith('.gz') && !name.endsWith('.br')) assets.set(name, load(join(assetsDir, name)));

  const hidden = { schema: { hide: true } };
  const serveShell = async (request: FastifyRequest, reply: FastifyReply) => {
    if (shell === undefined)
      throw new ApiError(
        503,
        'Unavailable',
        'The web console is not built: run npm start or npm run build.',
        undefined,
        {},
        'CONSOLE_NOT_BUILT',
      );
    return send(request, reply, shell, 'no-cache');
  };

  app.get('/', hidden, async (_request, reply) => reply.redirect('/ui/', 302));
  app.get('/ui', hidden, async (_request, reply) => reply.redirect('/ui/', 301));
  app.get('/ui/', hidden, serveShell);
  app.get('/ui/*', hidden, serveShell);
  app.get<{ Params: { name: string } }>('/ui/assets/:name', hidden, async (request, reply) => {
    const file = assets.get(request.params.name);
    if (file === undefined)
      throw ApiError.notFound(`No console asset ${request.params.name}.`, 'ASSET_NOT_FOUND');
    return send(request, reply, file, 'public, max-age=31536000, immutable');
  });
}

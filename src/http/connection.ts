/**
 * What happens below the routes, on the connection: answers that Node's HTTP parser or Fastify's
 * router would otherwise write in their own shapes (malformed request, header overflow, request
 * timeout, bad percent-encoding, over-long path segment), absolute-form request targets, and
 * closing a connection whose request body was not read (a 403 or 413 before the body) instead of
 * reading the rest of it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { ApiError, errorBody } from './errors.js';

/** The HTTP/1.1 text of an error answer that closes the connection. */
export function rawErrorResponse(err: ApiError): string {
  const body = JSON.stringify(errorBody(err));
  const reason = err.error.replace(/[^\x20-\x7e]/g, '');
  return (
    `HTTP/1.1 ${err.statusCode} ${reason}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

/** The answer to an error Node's HTTP server reports before a request reaches Fastify. */
export function clientErrorAnswer(code: string | undefined): ApiError {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError(
        408,
        'Request Timeout',
        'The request (headers and body) was not received within REQUEST_TIMEOUT_MS.',
        undefined,
        {},
        'REQUEST_TIMEOUT',
      );
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(
        431,
        'Request Header Fields Too Large',
        'The request headers are too large.',
        undefined,
        {},
        'HEADERS_TOO_LARGE',
      );
    case 'HPE_INVALID_METHOD':
      return new ApiError(
        501,
        'Not Implemented',
        'The request method is not one netkeep serves.',
        undefined,
        {},
        'NOT_IMPLEMENTED',
      );
    default:
      return ApiError.badRequest('The request is not valid HTTP.', 'MALFORMED_REQUEST');
  }
}

/**
 * Fastify's `clientErrorHandler`: answers in the JSON error body when nothing of a response was
 * written yet (as Node's own handler does), then closes the connection.
 */
export function handleClientError(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (socket.writable && (!inFlight || !inFlight.headersSent)) {
    socket.end(rawErrorResponse(clientErrorAnswer(err.code)), () => socket.destroy());
    return;
  }
  socket.destroy();
}

/**
 * The path of an absolute-form target (`GET http://host/health HTTP/1.1`, as a proxy sends it),
 * so that it routes (and is authorised) like `/health`; other targets unchanged.
 */
export function originFormUrl(url: string): string {
  if (!/^https?:\/\//i.test(url)) return url;
  try {
    const parsed = new URL(url);
    return `${parsed.pathname}${parsed.search}`;
  } catch {
    return url;
  }
}

/** Fastify's `rewriteUrl`. */
export function rewriteUrl(req: IncomingMessage): string {
  return originFormUrl(req.url ?? '/');
}

/**
 * Answers one of the router's own errors (bad percent-encoding, over-long path segment) in the
 * JSON error body, or 403 when the request is not `allowed` (no valid token for a protected path).
 */
export function sendRouterError(err: FastifyError, allowed: boolean, reply: FastifyReply): void {
  const answer = allowed ? routerErrorAnswer(err) : ApiError.forbidden();
  void reply.code(answer.statusCode).send(errorBody(answer));
}

/** The netkeep form of the router's own errors. */
function routerErrorAnswer(err: FastifyError): ApiError {
  switch (err.code) {
    case 'FST_ERR_BAD_URL':
      return ApiError.badRequest('The URL is not valid: a % is not followed by two hex digits.', 'BAD_URL');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new ApiError(414, 'URI Too Long', 'A path segment is too long.', undefined, {}, 'URI_TOO_LONG');
    default:
      return ApiError.badRequest(err.message);
  }
}

/**
 * Whether part of the request's body may still be unread. `complete` alone does not say: a request
 * without a body is answered from inside Node's header callback when every hook on its path is
 * synchronous, before Node marks it complete, and closing those connections would end keep-alive
 * for every GET.
 */
function bodyMayBeUnread(raw: IncomingMessage): boolean {
  if (raw.complete) return false;
  const length = raw.headers['content-length'];
  return raw.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** How long a closing connection waits for the client to stop sending before it is reset. */
const lingerMs = 1000;

/**
 * An answer sent before the request body was read (auth refused it, it is over the limit) closes
 * the connection: otherwise Node would read and discard the rest of the body, however large, to
 * keep the connection alive. The close lingers: the answer and a FIN go out at once, then the
 * socket is destroyed when the client closes its side or after a second, without reading more.
 * Destroying it at once, with the client's data still arriving, would send a reset that can make
 * the client lose the answer before reading it.
 */
export function registerCloseUnreadBodies(app: FastifyInstance): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    if (!bodyMayBeUnread(request.raw)) {
      done(null, payload);
      return;
    }
    void reply.header('Connection', 'close');
    const socket = request.raw.socket as Socket & { destroySoon?: () => void };
    // Node calls destroySoon() once an answer with Connection: close is written.
    socket.destroySoon = () => {
      socket.pause();
      socket.end();
      socket.once('end', () => socket.destroy());
      setTimeout(() => socket.destroy(), lingerMs).unref();
    };
    done(null, payload);
  });
}

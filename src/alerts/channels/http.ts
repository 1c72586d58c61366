/**
 * One HTTP POST for the HTTP channels (webhook, ntfy, Apprise), with node:http(s). A 2xx answer is
 * a confirmation; anything else (another status, a redirect, no answer) rejects with a message
 * that names the status and the start of the answer, never the URL (it may hold a password).
 * The body is a string, sent as UTF-8: the bytes a signature is computed over.
 * User and password in the URL become a Basic Authorization header.
 * A failed answer's body is read up to about a kilobyte, then the connection is dropped; it is
 * asked for without compression and never decompressed (docs/alerts.md, "Limits").
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { StringDecoder } from 'node:string_decoder';

export interface HttpTarget {
  /** The URL without user and password. */
  readonly url: string;
  /** `Basic ...` when the configured URL had user:password; undefined otherwise. */
  readonly basicAuth: string | undefined;
}

/** Splits a configured URL into the request URL and its credentials. */
export function httpTarget(configured: string): HttpTarget {
  const url = new URL(configured);
  let basicAuth: string | undefined;
  if (url.username !== '' || url.password !== '') {
    const user = decodeURIComponent(url.username);
    const password = decodeURIComponent(url.password);
    basicAuth = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    url.username = '';
    url.password = '';
  }
  return { url: url.toString(), basicAuth };
}

/** A URL as it may appear in a log: without password, query or fragment (tokens hide there). */
export function redactedUrl(configured: string): string {
  try {
    const url = new URL(configured);
    if (url.password !== '') url.password = 'redacted';
    url.search = '';
    url.hash = '';
    return url.toString();
  } catch {
    return '(invalid URL)';
  }
}

/** Characters of a failed answer's body kept in the error (enough to see what the receiver said). */
const bodyExcerpt = 200;
/**
 * Bytes of a failed answer's body read at most: the excerpt's characters at up to 4 UTF-8 bytes
 * each, and a little more to tell that it went on. The rest is never read: the connection is
 * destroyed, so a receiver answering gigabytes (or endlessly) costs a kilobyte.
 */
const bodyReadLimit = bodyExcerpt * 4 + 1;

/**
 * Reads at most `limit` bytes of an answer's body, then destroys the response (and its socket).
 * Resolves with what was read; never rejects (an excerpt is a nicety).
 */
function readAtMost(response: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      response.off('data', onData);
      response.destroy();
      resolve(Buffer.concat(chunks, Math.min(size, limit)));
    };
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) done();
    };
    response.on('data', onData);
    response.once('end', done);
    response.once('error', done);
    response.once('close', done);
  });
}

/** The excerpt of a failed answer: its start as text, whitespace collapsed, at most `bodyExcerpt` characters. */
function excerptOf(response: IncomingMessage, bytes: Buffer): string {
  const encoding = response.headers['content-encoding'];
  // Asked for identity; a receiver that compresses anyway is not decompressed (a gzip bomb).
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity')
    return `(a body in ${encoding.slice(0, 20)} encoding, not read)`;
  // write(), not end(): a character cut at the read limit is left out, not replaced.
  const text = new StringDecoder('utf8').write(bytes).replace(/\s+/g, ' ').trim();
  return text.length > bodyExcerpt ? `${text.slice(0, bodyExcerpt)}...` : text;
}

/** Sends the POST; resolves with the answer's head (its body not read yet). */
function request(
  target: HttpTarget,
  headers: Record<string, string>,
  body: Buffer,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const url = new URL(target.url);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    // node:http rather than fetch: it never follows a redirect (not a confirmation, and it would
    // resend the body elsewhere) and never decompresses an answer on its own.
    const req = send(url, { method: 'POST', headers, signal }, resolve);
    // Kept for the request's whole life: an error after the answer began (reset, abort while its
    // body is read) must not be an unhandled 'error' event.
    req.on('error', reject);
    req.end(body);
  });
}

export async function postHttp(
  target: HttpTarget,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
): Promise<void> {
  const bytes = Buffer.from(body, 'utf8');
  const allHeaders: Record<string, string> = {
    'user-agent': 'netkeep',
    ...headers,
    'content-length': String(bytes.length),
    // An error's excerpt is read as it comes: no compressed answer (see excerptOf).
    'accept-encoding': 'identity',
  };
  if (target.basicAuth !== undefined && allHeaders.authorization === undefined)
    allHeaders.authorization = target.basicAuth;
  const response = await request(target, allHeaders, bytes, signal);
  const status = response.statusCode ?? 0;
  if (status >= 200 && status < 300) {
    // The confirmation is the status; whatever body follows is not needed.
    response.destroy();
    return;
  }
  const excerpt = excerptOf(response, await readAtMost(response, bodyReadLimit));
  // A status line can be as long as the headers allow (16 KiB): its start is enough.
  const statusText = (response.statusMessage ?? '').slice(0, 64);
  throw new Error(`HTTP ${status}${statusText ? ` ${statusText}` : ''}${excerpt ? `: ${excerpt}` : ''}`);
}

/**
 * One HTTP POST for the HTTP channels (webhook, ntfy, Apprise), with Node's fetch. A 2xx answer is
 * a confirmation; anything else (another status, a redirect, no answer) rejects with a message
 * that names the status and the start of the answer, never the URL (it may hold a password).
 * The body is a string: fetch sends it as UTF-8, the bytes a signature is computed over.
 * User and password in the URL become a Basic Authorization header (fetch refuses them in URLs).
 */

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

export async function postHttp(
  target: HttpTarget,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
): Promise<void> {
  const allHeaders: Record<string, string> = { 'user-agent': 'netkeep', ...headers };
  if (target.basicAuth !== undefined && allHeaders.authorization === undefined)
    allHeaders.authorization = target.basicAuth;
  const response = await fetch(target.url, {
    method: 'POST',
    headers: allHeaders,
    body,
    signal,
    // A redirect is not a confirmation (and would resend the body elsewhere).
    redirect: 'manual',
  });
  if (response.status >= 200 && response.status < 300) {
    await response.body?.cancel();
    return;
  }
  const text = (await response.text().catch(() => '')).replace(/\s+/g, ' ').trim();
  const excerpt = text.length > bodyExcerpt ? `${text.slice(0, bodyExcerpt)}...` : text;
  throw new Error(
    `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}${excerpt ? `: ${excerpt}` : ''}`,
  );
}

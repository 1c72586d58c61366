/**
 * Talking to netkeep's API from the page. The session cookie authorises every request (the browser
 * sends it; page script never sees it or the token). Failures become `ApiFailure` with the server's
 * own sentence, so that pages can show errors in words. A 403 "not authorized" means the session is
 * gone: listeners of `onSignedOut` show the sign-in form. Only for a request sent since the latest
 * sign-in (`signIn`): a page's first requests, refused before it signed in, may be answered after.
 */

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details?: string,
  ) {
    super(message);
  }
}

const signedOutListeners = new Set<() => void>();
const authorizedListeners = new Set<() => void>();
/** Sign-ins of this page so far; each answer is known by the count its request was sent at. */
let signIns = 0;
const sentAt = new WeakMap<Response, number>();

/** Called whenever a request finds that the session has ended. */
export function onSignedOut(listener: () => void): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

/** Called whenever a request was not refused for want of a session (any answer but that 403). */
export function onAuthorized(listener: () => void): () => void {
  authorizedListeners.add(listener);
  return () => authorizedListeners.delete(listener);
}

function authorized(): void {
  for (const l of authorizedListeners) l();
}

interface ErrorBody {
  message?: unknown;
  details?: unknown;
  error?: unknown;
}

function failureOf(response: Response, status: number, body: unknown, fallback: string): ApiFailure {
  const b = (typeof body === 'object' && body !== null ? body : {}) as ErrorBody;
  const message = typeof b.message === 'string' && b.message !== '' ? b.message : fallback;
  const details = typeof b.details === 'string' ? b.details : undefined;
  if (status === 403 && message === 'ERROR: Not authorized') {
    // Refused before the latest sign-in: it says nothing of the session the page has now.
    if (sentAt.get(response) === signIns) for (const l of signedOutListeners) l();
  } else authorized(); // any other answer (or none) is the page's to show
  return new ApiFailure(status, message, details);
}

function statusText(response: Response): string {
  if (response.status === 404) return 'This server does not offer that yet (404).';
  if (response.status >= 500) return `The server failed (${response.status}).`;
  return `The request failed (${response.status} ${response.statusText}).`;
}

export interface RequestOptions {
  readonly body?: unknown;
  readonly signal?: AbortSignal;
}

/** Sends a request with the session cookie; a network failure becomes an ApiFailure with status 0. */
async function send(
  method: string,
  path: string,
  options: RequestOptions,
  accept?: string,
): Promise<Response> {
  const headers: Record<string, string> = {};
  if (accept !== undefined) headers.Accept = accept;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const signInsAtSend = signIns;
  try {
    const response = await fetch(path, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: options.signal,
      credentials: 'same-origin',
    });
    sentAt.set(response, signInsAtSend);
    return response;
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    authorized();
    throw new ApiFailure(0, 'The server cannot be reached. Is netkeep running?');
  }
}

/** The JSON body of a response, or an ApiFailure carrying the server's sentence. */
async function readJson<T>(response: Response): Promise<T> {
  const text = await response.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!response.ok) throw failureOf(response, response.status, body, statusText(response));
  authorized();
  return body as T;
}

/** A JSON request; resolves with the parsed body, rejects with ApiFailure. */
export async function api<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  return readJson<T>(await send(method, path, options));
}

export const get = <T>(path: string, signal?: AbortSignal) => api<T>('GET', path, { signal });

/** Exchanges the API token for the session cookie (`POST /session`). */
export async function signIn(token: string): Promise<void> {
  await api('POST', '/session', { body: { token } });
  signIns++;
}

/** One `event:`/`data:` message of a Server-Sent Events stream. */
export interface StreamMessage {
  readonly event: string;
  readonly data: string;
}

/** Splits a Server-Sent Events byte stream into messages. */
export async function* readEventStream(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue; // keep-alive comment
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length > 0) yield { event, data: data.join('\n') };
    }
  }
}

/**
 * A tool request with live progress: asks for `text/event-stream` and calls `onProgress` with each
 * `progress` message's data, then resolves with the final result. A server that answers plain JSON
 * (no live output for that tool) works too: the result simply arrives at the end.
 */
export async function streamed<T>(
  method: string,
  path: string,
  onProgress: (data: Record<string, unknown>) => void,
  options: RequestOptions = {},
): Promise<T> {
  const response = await send(method, path, options, 'text/event-stream');
  const type = response.headers.get('content-type') ?? '';
  if (!type.startsWith('text/event-stream') || response.body === null) return readJson<T>(response);
  for await (const message of readEventStream(response.body)) {
    let data: unknown;
    try {
      data = JSON.parse(message.data);
    } catch {
      continue;
    }
    if (message.event === 'progress') onProgress(data as Record<string, unknown>);
    else if (message.event === 'result') return data as T;
    else if (message.event === 'error') {
      const status = (data as { status?: unknown }).status;
      throw failureOf(response, typeof status === 'number' ? status : 500, data, 'The command failed.');
    }
  }
  throw new ApiFailure(0, 'The stream ended before the result arrived.');
}

/** A human sentence for any failure. */
export function describe(err: unknown): string {
  if (err instanceof ApiFailure) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

/**
 * Public internet connection information: one GET of INTERNETINFO_URL (ipinfo.io JSON shape),
 * bounded by INTERNETINFO_TIMEOUT_MS. Not a command, so it does not go through the tool runner.
 */
import { DomainError } from '../errors.js';

export interface InternetInfoOptions {
  readonly url: URL;
  readonly timeoutMs: number;
}

export interface InternetInfoResult {
  success: true;
  output: string;
  info: Record<string, unknown>;
}

/** Largest answer read; an IP information record is a few hundred bytes. */
const maxBodyBytes = 64 * 1024;

/** The service failed us: `command-failed`, shown as "Request failed". */
function failure(message: string, details?: string): DomainError {
  return new DomainError('command-failed', message, {
    code: 'INTERNETINFO_FAILED',
    reason: 'Request failed',
    details,
  });
}

function field(info: Record<string, unknown>, name: string): string {
  const value = info[name];
  return typeof value === 'string' || typeof value === 'number' ? String(value) : 'unknown';
}

/** The one-line summary of an ipinfo.io-shaped object. */
export function formatInternetInfo(info: Record<string, unknown>): string {
  return `IP: ${field(info, 'ip')}, City: ${field(info, 'city')}, Country: ${field(info, 'country')}, Org: ${field(info, 'org')}`;
}

export async function internetInfo(
  options: InternetInfoOptions,
  signal?: AbortSignal,
): Promise<InternetInfoResult> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const combined = signal ? AbortSignal.any([timeout, signal]) : timeout;
  let body: string;
  try {
    const response = await fetch(options.url, {
      signal: combined,
      headers: { accept: 'application/json' },
      redirect: 'follow',
    });
    body = await readLimited(response);
    if (!response.ok) {
      throw failure(
        `The IP information service answered HTTP ${response.status}.`,
        body.slice(0, 2048) || undefined,
      );
    }
  } catch (err) {
    if (err instanceof DomainError) throw err;
    if (timeout.aborted) {
      throw failure(`The IP information service did not answer within ${options.timeoutMs} ms (timed out).`);
    }
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
    throw failure(
      'The IP information service could not be reached.',
      cause ?? (err instanceof Error ? err.message : String(err)),
    );
  }
  if (body.trim() === '') throw failure('The IP information service answered with an empty body.');
  let info: unknown;
  try {
    info = JSON.parse(body);
  } catch {
    throw failure('The IP information service did not answer with JSON.', body.slice(0, 2048));
  }
  if (typeof info !== 'object' || info === null || Array.isArray(info) || Object.keys(info).length === 0) {
    throw failure(
      'The IP information service answered with an empty or non-object JSON value.',
      body.slice(0, 2048),
    );
  }
  const record = info as Record<string, unknown>;
  return { success: true, output: formatInternetInfo(record), info: record };
}

async function readLimited(response: Response): Promise<string> {
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.length;
    if (size > maxBodyBytes)
      throw failure(`The IP information service answered with more than ${maxBodyBytes} bytes.`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Outcomes of domain work that are not results: the kinds of failure that devices, network tools,
 * the scanner, alerts and imports report. Domain modules throw `DomainError` and know nothing of
 * HTTP; `src/http/errors.ts` is the one place that turns a kind into a status code and the JSON
 * error body, for plain and streamed answers alike.
 */

/** Every kind of failure a domain module can report. */
export const errorKinds = [
  'invalid', // the input breaks a rule (the message names the field and the rule)
  'not-found', // the thing asked for does not exist
  'conflict', // the thing exists already, or the state forbids the action now
  'timeout', // a command or a remote service ran out of time and was stopped
  'saturated', // too much work is running or waiting; try again later
  'tool-missing', // an OS tool is not installed (the message names the package)
  'command-failed', // a command or a remote service failed (details: its stderr tail)
  'aborted', // the client went away; the work was stopped
  'shutting-down', // the server is stopping; the work was refused or stopped
  'unavailable', // a dependency is not ready (the database is not open, a feature is off)
] as const;

export type ErrorKind = (typeof errorKinds)[number];

export interface DomainErrorOptions {
  /**
   * Stable machine-readable code, e.g. "TOOL_TIMEOUT". Clients branch on it; it never changes
   * once released. Default: the kind in upper snake case.
   */
  readonly code?: string;
  /** Short human reason shown as the body's `error`, e.g. "Tool timed out". Default: per kind. */
  readonly reason?: string;
  /** Command failures: the tail of stderr. */
  readonly details?: string;
  /** For `saturated`: seconds after which a retry may succeed. */
  readonly retryAfterSeconds?: number;
  readonly cause?: unknown;
}

export class DomainError extends Error {
  override name = 'DomainError';
  readonly code: string;
  readonly reason: string | undefined;
  readonly details: string | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly kind: ErrorKind,
    message: string,
    options: DomainErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code ?? kind.toUpperCase().replace(/-/g, '_');
    this.reason = options.reason;
    this.details = options.details;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

export function isDomainError(value: unknown): value is DomainError {
  return value instanceof DomainError;
}

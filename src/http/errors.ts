/**
 * One error type for every failure a client can see, and the one place that turns any thrown
 * value into netkeep's JSON error body:
 *   {"success":false,"error":"<short reason>","message":"<one sentence>","details"?:"<stderr tail>"}
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import { DomainError, type ErrorKind } from '../errors.js';

export class ApiError extends Error {
  override name = 'ApiError';

  constructor(
    /** HTTP status. */
    readonly statusCode: number,
    /** Short machine-friendly reason, e.g. "Bad Request" or "Tool not installed". */
    readonly error: string,
    /** One human sentence. */
    message: string,
    /** Command failures: the tail of stderr. */
    readonly details?: string,
    /** Extra response headers (e.g. Retry-After). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }

  static badRequest(message: string): ApiError {
    return new ApiError(400, 'Bad Request', message);
  }
  static forbidden(): ApiError {
    return new ApiError(403, 'Forbidden', 'ERROR: Not authorized');
  }
  static notFound(message: string): ApiError {
    return new ApiError(404, 'Not Found', message);
  }
  static conflict(message: string): ApiError {
    return new ApiError(409, 'Conflict', message);
  }
}

export interface ErrorBody {
  success: false;
  error: string;
  message: string;
  details?: string;
}

export function errorBody(err: ApiError): ErrorBody {
  const body: ErrorBody = { success: false, error: err.error, message: err.message };
  if (err.details !== undefined) body.details = err.details;
  return body;
}

type ValidationIssue = NonNullable<FastifyError['validation']>[number];

/** What a failed alternative of an anyOf accepts, in words: `0`, `true, false`, `null`, ... */
function alternative(issue: ValidationIssue): string[] {
  const params = issue.params;
  if (issue.keyword === 'const') return [JSON.stringify(params.allowedValue)];
  if (issue.keyword === 'type') {
    const type = String(params.type);
    if (type === 'boolean') return ['true', 'false'];
    if (type === 'null') return ['null'];
    return [type === 'integer' || type === 'array' || type === 'object' ? `an ${type}` : `a ${type}`];
  }
  return [`a value that ${issue.message ?? 'is valid'}`];
}

/** "0, 1, true or false" */
function inWords(values: readonly string[]): string {
  return values.length <= 1
    ? (values[0] ?? '')
    : `${values.slice(0, -1).join(', ')} or ${values[values.length - 1]}`;
}

/**
 * Describes Ajv validation errors as "field 'x' must be string; ..." naming each field. A value that
 * fits none of a union's alternatives (a flag sent as "yes") is one sentence listing what the field
 * accepts, "devFavorite must be 0, 1, true or false", instead of one line per alternative.
 */
function describeValidation(err: FastifyError): string {
  const issues = err.validation ?? [];
  const unionPaths = new Set(issues.filter((i) => i.keyword === 'anyOf').map((i) => i.instancePath));
  const fieldName = (issue: ValidationIssue): string =>
    issue.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const parts = issues.flatMap((issue) => {
    const params = issue.params;
    if (typeof params.additionalProperty === 'string')
      return [`unknown field '${params.additionalProperty}'`];
    if (typeof params.missingProperty === 'string') return [`field '${params.missingProperty}' is required`];
    const path = fieldName(issue);
    if (unionPaths.has(issue.instancePath)) {
      if (issue.keyword !== 'anyOf') return [];
      const branches = issues.filter(
        (other) => other.instancePath === issue.instancePath && other.keyword !== 'anyOf',
      );
      // A literal branch ({type: 'number', const: 0}) fails twice; its const says it all.
      const branchOf = (other: ValidationIssue): string => other.schemaPath.replace(/\/[^/]*$/, '');
      const literals = new Set(branches.filter((b) => b.keyword === 'const').map(branchOf));
      const accepted = branches
        .filter((b) => !(b.keyword === 'type' && literals.has(branchOf(b))))
        .flatMap(alternative);
      return [`${path || (err.validationContext ?? 'value')} must be ${inWords([...new Set(accepted)])}`];
    }
    const where = path ? `field '${path}'` : (err.validationContext ?? 'value');
    return [`${where} ${issue.message ?? 'is invalid'}`];
  });
  const unique = [...new Set(parts)];
  return unique.length > 0
    ? `Invalid ${err.validationContext ?? 'input'}: ${unique.join('; ')}`
    : err.message;
}

/** HTTP status and default short reason of each domain error kind: the one such table. */
const kindStatus: Readonly<Record<ErrorKind, { status: number; reason: string }>> = {
  invalid: { status: 400, reason: 'Bad Request' },
  'not-found': { status: 404, reason: 'Not Found' },
  conflict: { status: 409, reason: 'Conflict' },
  timeout: { status: 504, reason: 'Timed out' },
  saturated: { status: 429, reason: 'Too Many Requests' },
  'tool-missing': { status: 503, reason: 'Tool not installed' },
  'command-failed': { status: 500, reason: 'Command failed' },
  aborted: { status: 499, reason: 'Client Closed Request' },
  'shutting-down': { status: 503, reason: 'Shutting down' },
  unavailable: { status: 503, reason: 'Unavailable' },
};

/** The HTTP form of a domain outcome. */
export function fromDomainError(err: DomainError): ApiError {
  const { status, reason } = kindStatus[err.kind];
  const headers: Record<string, string> =
    err.retryAfterSeconds === undefined ? {} : { 'Retry-After': String(err.retryAfterSeconds) };
  return new ApiError(status, err.reason ?? reason, err.message, err.details, headers);
}

/** Maps domain errors and Fastify's own errors (body parsing, limits, validation) onto ApiError. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof DomainError) return fromDomainError(err);
  const fastifyError = err as Partial<FastifyError>;
  if (fastifyError.validation) return ApiError.badRequest(describeValidation(fastifyError as FastifyError));
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 'Payload Too Large', 'The request body is larger than the limit.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(
        415,
        'Unsupported Media Type',
        'Request bodies must be JSON (Content-Type: application/json).',
      );
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return ApiError.badRequest('The Content-Length header does not match the body.');
  }
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new ApiError(status, 'Bad Request', fastifyError.message ?? 'The request is invalid.');
  }
  return new ApiError(500, 'Internal Server Error', 'An unexpected error occurred.');
}

/** Installs the error handler: every error leaves as the JSON error body. */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err, request, reply) => {
    const apiError = toApiError(err);
    if (apiError.statusCode >= 500 && !(err instanceof ApiError) && !(err instanceof DomainError))
      request.log.error({ err }, 'unexpected error');
    return reply.code(apiError.statusCode).headers(apiError.headers).send(errorBody(apiError));
  });
}

/**
 * The one place that turns any thrown value into netkeep's JSON error body, for plain replies and
 * streamed answers alike:
 *   {"success":false,"error":"<short reason>","code":"<UPPER_SNAKE>","message":"<one sentence>",
 *    "details"?:"<stderr tail>"}
 * Domain modules throw `DomainError` (src/errors.ts) and know nothing of HTTP; `ApiError` is for
 * what only the HTTP layer can say (authentication, routing, body parsing).
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import { enumCode, patternWords } from '../enum-schema.js';
import { DomainError, type ErrorKind } from '../errors.js';
import { acceptedTimePattern } from '../time.js';
import {
  hostOrIpPattern,
  ipOrMacPattern,
  integerTextPattern,
  ipLiteralPattern,
  ipv4Pattern,
  macPattern,
  scanTargetPattern,
} from '../validation.js';
import type { ErrorBody } from './schemas.js';

export type { ErrorBody } from './schemas.js';

/** The code an HTTP-layer error carries when it names none: one per status. */
const statusCodes: Readonly<Record<number, string>> = {
  400: 'BAD_REQUEST',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  414: 'URI_TOO_LONG',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'TOO_MANY_REQUESTS',
  499: 'CLIENT_CLOSED',
  500: 'INTERNAL_ERROR',
  501: 'NOT_IMPLEMENTED',
  503: 'UNAVAILABLE',
  504: 'TIMEOUT',
};

export class ApiError extends Error {
  override name = 'ApiError';
  /** Stable machine-readable code of the body, e.g. "FORBIDDEN". */
  readonly code: string;

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
    /** Stable code; default: the one of the status (BAD_REQUEST, NOT_FOUND...). */
    code?: string,
  ) {
    super(message);
    this.code = code ?? statusCodes[statusCode] ?? (statusCode >= 500 ? 'INTERNAL_ERROR' : 'BAD_REQUEST');
  }

  static badRequest(message: string, code = 'BAD_REQUEST'): ApiError {
    return new ApiError(400, 'Bad Request', message, undefined, {}, code);
  }
  static forbidden(): ApiError {
    return new ApiError(403, 'Forbidden', 'ERROR: Not authorized');
  }
  static notFound(message: string, code = 'NOT_FOUND'): ApiError {
    return new ApiError(404, 'Not Found', message, undefined, {}, code);
  }
  static conflict(message: string, code = 'CONFLICT'): ApiError {
    return new ApiError(409, 'Conflict', message, undefined, {}, code);
  }
}

export function errorBody(err: ApiError): ErrorBody {
  const body: ErrorBody = { success: false, error: err.error, code: err.code, message: err.message };
  if (err.details !== undefined) body.details = err.details;
  return body;
}

type ValidationIssue = NonNullable<FastifyError['validation']>[number];

/** What each pattern of the route schemas means, in words, for validation messages. */
const patternRules: ReadonlyMap<string, string> = new Map([
  [macPattern, 'is not a MAC address (aa:bb:cc:dd:ee:ff, aa-bb-cc-dd-ee-ff, aabb.ccdd.eeff or aabbccddeeff)'],
  [integerTextPattern, 'must be an integer (digits only)'],
  [ipv4Pattern, 'must be an IPv4 address such as 192.168.1.255'],
  [ipLiteralPattern, 'must be one IPv4 or IPv6 address'],
  [scanTargetPattern, 'must be an IPv4 or IPv6 address, or a CIDR range such as 192.168.1.0/24'],
  [hostOrIpPattern, 'must be an IP address or a hostname'],
  [ipOrMacPattern, 'must be an IP address or a MAC address'],
  // Where null is also accepted (a device's times), the union's message adds "or null".
  [acceptedTimePattern, 'must be an ISO 8601 date-time'],
]);

/** The words of a pattern: its entry above, or the one registered with its schema (enum-schema.ts). */
function patternRule(pattern: string): string | undefined {
  return patternRules.get(pattern) ?? patternWords(pattern)?.rule;
}

/**
 * The code of a value that breaks a field's own rule (its pattern or its list of values): the code
 * the field's validator gives, so a client sees INVALID_MAC whichever layer refused the MAC. By
 * pattern, or by field name where a pattern or a list serves several fields. Other schema failures
 * (wrong type, unknown field) are VALIDATION_FAILED.
 */
const patternCodes: ReadonlyMap<string, string> = new Map([
  [macPattern, 'INVALID_MAC'],
  [ipv4Pattern, 'INVALID_BROADCAST'],
  [ipLiteralPattern, 'INVALID_ADDRESS'],
  [scanTargetPattern, 'INVALID_SCAN_TARGET'],
  [hostOrIpPattern, 'INVALID_NAME'],
  [ipOrMacPattern, 'INVALID_TARGET'],
  [acceptedTimePattern, 'INVALID_FIELD'],
]);
const fieldCodes: Readonly<Record<string, string>> = {
  period: 'INVALID_PERIOD',
  status: 'INVALID_STATUS',
  offset: 'INVALID_OFFSET',
  limit: 'INVALID_LIMIT',
  mode: 'INVALID_MODE',
  // The event log's time filters share the time pattern with a device's times (INVALID_FIELD).
  since: 'INVALID_TIME',
  until: 'INVALID_TIME',
};

/**
 * The code of a validation failure: one field rule broken, or VALIDATION_FAILED. A list of values
 * registered with its code (stringEnum) gives that code; else the field's name; a pattern gives the
 * field's name's code, else the pattern's.
 */
function validationCode(err: FastifyError): string {
  const codes = new Set(
    (err.validation ?? []).map((issue) => {
      const byName = fieldCodes[issue.instancePath.split('/').pop() ?? ''];
      const { allowedValues, pattern } = issue.params;
      if (issue.keyword === 'enum' && Array.isArray(allowedValues))
        return enumCode(allowedValues) ?? byName ?? 'VALIDATION_FAILED';
      if (issue.keyword === 'pattern' && typeof pattern === 'string')
        return byName ?? patternCodes.get(pattern) ?? patternWords(pattern)?.code ?? 'VALIDATION_FAILED';
      return 'VALIDATION_FAILED';
    }),
  );
  const [only] = codes;
  return codes.size === 1 && only !== undefined ? only : 'VALIDATION_FAILED';
}

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
  if (typeof params.pattern === 'string') {
    const rule = patternRule(params.pattern);
    if (rule !== undefined) return [`a value that ${rule.replace(/^(must be|is) /, 'is ')}`];
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
 * Describes Ajv validation errors as "field 'x' must be string; ..." naming each field, in the words
 * of the field's rule (patternRules). A value that fits none of a union's alternatives (a flag sent
 * as "yes") is one sentence listing what the field accepts, "devFavorite must be 0, 1, true or
 * false", instead of one line per alternative.
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
    // A query parameter that breaks its list or pattern reads as the parameter's own validator
    // words it: "status must be one of: ...", "since must be an ISO 8601 date-time."
    const asQuery = err.validationContext === 'querystring' && path !== '';
    if (Array.isArray(params.allowedValues))
      return [
        asQuery
          ? `${path} must be one of: ${params.allowedValues.join(', ')}.`
          : `${where} must be one of: ${params.allowedValues.join(', ')}`,
      ];
    if (typeof params.pattern === 'string') {
      const rule = patternRule(params.pattern) ?? `must match ${params.pattern}`;
      return [asQuery ? `${path} ${rule}.` : `${where} ${rule}`];
    }
    return [`${where} ${issue.message ?? 'is invalid'}`];
  });
  const unique = [...new Set(parts)];
  const onlyRules = (err.validation ?? []).every(
    (issue) => Array.isArray(issue.params.allowedValues) || typeof issue.params.pattern === 'string',
  );
  if (err.validationContext === 'querystring' && onlyRules && unique.length > 0) return unique.join(' ');
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
  return new ApiError(status, err.reason ?? reason, err.message, err.details, headers, err.code);
}

/** Maps domain errors and Fastify's own errors (body parsing, limits, validation) onto ApiError. */
export function toApiError(err: unknown, bodyLimit?: number): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof DomainError) return fromDomainError(err);
  const fastifyError = err as Partial<FastifyError>;
  if (fastifyError.validation)
    return ApiError.badRequest(
      describeValidation(fastifyError as FastifyError),
      validationCode(fastifyError as FastifyError),
    );
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(
        413,
        'Payload Too Large',
        bodyLimit === undefined
          ? 'The request body is larger than the limit (BODY_LIMIT).'
          : `The request body is larger than the limit of ${bodyLimit} bytes (BODY_LIMIT).`,
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(
        415,
        'Unsupported Media Type',
        'Request bodies must be JSON (Content-Type: application/json).',
      );
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return ApiError.badRequest('The Content-Length header does not match the body.', 'BAD_CONTENT_LENGTH');
  }
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new ApiError(status, 'Bad Request', fastifyError.message ?? 'The request is invalid.');
  }
  return new ApiError(500, 'Internal Server Error', 'An unexpected error occurred.');
}

/** What a thrown value becomes on the wire: for a plain reply, or the last event of a stream. */
export interface ErrorResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: ErrorBody;
  /** True for a failure nobody reported on purpose (a bug): it deserves an error log line. */
  readonly unexpected: boolean;
}

/** Turns any thrown value into its status, headers and JSON error body. */
export function errorResponse(err: unknown, bodyLimit?: number): ErrorResponse {
  const apiError = toApiError(err, bodyLimit);
  return {
    status: apiError.statusCode,
    headers: apiError.headers,
    body: errorBody(apiError),
    unexpected: apiError.statusCode >= 500 && !(err instanceof ApiError) && !(err instanceof DomainError),
  };
}

/** Installs the error handler: every error leaves as the JSON error body. */
export function registerErrorHandler(app: FastifyInstance, bodyLimit?: number): void {
  app.setErrorHandler((err, request, reply) => {
    const { status, headers, body, unexpected } = errorResponse(err, bodyLimit);
    if (unexpected) request.log.error({ err }, 'unexpected error');
    return reply.code(status).headers(headers).send(body);
  });
}

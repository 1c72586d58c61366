/** Response schemas shared by every route. */
import { Type, type Static } from '@sinclair/typebox';

export const ErrorSchema = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.String({ description: 'Short reason, e.g. "Bad Request".' }),
    code: Type.String({
      description: 'Stable machine-readable code, e.g. "DEVICE_NOT_FOUND" (table in docs/api.md).',
    }),
    message: Type.String({ description: 'One human sentence.' }),
    details: Type.Optional(Type.String({ description: 'Command failures: the tail of stderr.' })),
  },
  { $id: 'Error' },
);

/** The JSON error body every failure answers with. */
export type ErrorBody = Static<typeof ErrorSchema>;

/** Reference to the shared error body, for route `response` maps. */
export const ErrorRef = Type.Ref('Error');

export const SuccessSchema = Type.Object({ success: Type.Literal(true) });
export const SuccessMessageSchema = Type.Object({ success: Type.Literal(true), message: Type.String() });

/** The error statuses every protected route can answer, for OpenAPI. */
export const commonErrors = { 400: ErrorRef, 403: ErrorRef, 413: ErrorRef, 415: ErrorRef } as const;

/**
 * `preValidation` of a route whose JSON body is optional: no body validates as an empty object;
 * anything sent that is not an object is still a 400.
 */
export async function optionalBody(request: { body: unknown }): Promise<void> {
  if (request.body === undefined) request.body = {};
}

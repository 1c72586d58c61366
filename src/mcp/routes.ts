/**
 * `/mcp`: a Model Context Protocol server over Streamable HTTP (the official SDK, stateless: a
 * server and transport per request, JSON answers), behind the same token as every route (the
 * `onRequest` check runs before this handler). Its tools are tools.ts's table over the OpenAPI
 * document; a tool call is the route's request made with `app.inject` and the caller's own
 * credentials, so validation, logic, errors and authorisation are exactly the route's. An answer of
 * 4xx/5xx is a tool result with `isError` and the route's error body as its text.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../http/app.js';
import { ApiError, errorBody } from '../http/errors.js';
import { ErrorRef } from '../http/schemas.js';
import { buildTools, toolRequest, type OpenApiDocument, type Tool } from './tools.js';

export interface McpRoutesOptions {
  /** Reported to clients in `initialize`. */
  readonly version: string;
}

const JsonRpcAnswer = Type.Object(
  { jsonrpc: Type.Literal('2.0') },
  { additionalProperties: true, description: 'A JSON-RPC 2.0 message (result or error).' },
);

/** The request headers a tool call carries over: the caller's credentials and origin. */
const forwarded = ['authorization', 'cookie', 'origin', 'host'] as const;

/** The caller's headers as a Fetch `Headers` (repeated headers joined, as HTTP allows). */
function webHeaders(request: FastifyRequest): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers))
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  return headers;
}

export default async function mcpRoutes(app: App, { version }: McpRoutesOptions): Promise<void> {
  // The SDK's schema validator (for client answers netkeep never asks for): one for every request,
  // where each server would otherwise build its own Ajv (most of a call's cost).
  const jsonSchemaValidator = new AjvJsonSchemaValidator();
  // Built once, on the first request: the OpenAPI document is complete only once the app is ready.
  let tools: ReadonlyMap<string, Tool> | undefined;
  const toolMap = (): ReadonlyMap<string, Tool> => {
    tools ??= new Map(buildTools(app.swagger() as OpenApiDocument).map((tool) => [tool.name, tool]));
    return tools;
  };

  /** One tool call: the route's request with the caller's credentials; its answer as the result. */
  const call = async (request: FastifyRequest, name: string, args: Readonly<Record<string, unknown>>) => {
    const tool = toolMap().get(name);
    const text = (value: string, isError: boolean) => ({
      content: [{ type: 'text' as const, text: value }],
      isError,
    });
    if (tool === undefined)
      return text(
        JSON.stringify(errorBody(ApiError.notFound(`Unknown tool '${name}'.`, 'UNKNOWN_TOOL'))),
        true,
      );
    const made = toolRequest(tool, args);
    if (typeof made === 'string')
      return text(
        JSON.stringify(errorBody(ApiError.badRequest(`Invalid arguments: ${made}`, 'VALIDATION_FAILED'))),
        true,
      );
    const headers: Record<string, string> = {};
    for (const name of forwarded) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const answer = await app.inject({
      method: made.method,
      url: made.url,
      headers,
      ...(made.body === undefined ? {} : { payload: made.body }),
    });
    return text(answer.body, answer.statusCode >= 400);
  };

  app.post(
    '/mcp',
    {
      schema: {
        tags: ['mcp'],
        summary:
          'Model Context Protocol (Streamable HTTP, JSON-RPC): initialize, tools/list, tools/call of the tools generated from this document (docs/mcp.md).',
        // The SDK's answers: a JSON-RPC message (200; an error for a bad message: 400, 406 when
        // Accept lacks a type); 202 and no body for a notification. netkeep's own errors besides.
        response: {
          200: JsonRpcAnswer,
          202: Type.Null({ description: 'A notification was accepted: no body.' }),
          400: Type.Union([JsonRpcAnswer, ErrorRef]),
          403: ErrorRef,
          406: JsonRpcAnswer,
          413: ErrorRef,
          415: Type.Union([JsonRpcAnswer, ErrorRef]),
        },
      },
    },
    async (request, reply) => {
      // The low-level server of the SDK's McpServer: the tools are JSON Schemas already (the
      // routes'), which McpServer's own tool registry would want as zod schemas.
      const { server } = new McpServer(
        { name: 'netkeep', version },
        { capabilities: { tools: {} }, jsonSchemaValidator },
      );
      server.setRequestHandler(ListToolsRequestSchema, () => ({
        tools: [...toolMap().values()].map(({ name, description, inputSchema }) => ({
          name,
          description,
          inputSchema,
        })),
      }));
      server.setRequestHandler(CallToolRequestSchema, (message) =>
        call(request, message.params.name, message.params.arguments ?? {}),
      );
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      await server.connect(transport);
      let response: Response;
      let body: string;
      try {
        response = await transport.handleRequest(
          new Request(`http://netkeep${request.url}`, {
            method: 'POST',
            headers: webHeaders(request),
            body: JSON.stringify(request.body ?? null),
          }),
          { parsedBody: request.body },
        );
        body = await response.text();
      } finally {
        await server.close();
      }
      // The SDK's status (200, 202 for a notification, 4xx for a bad JSON-RPC message), as sent.
      const plain: FastifyReply = reply;
      void plain.code(response.status);
      response.headers.forEach((value, name) => {
        void plain.header(name, value);
      });
      return plain.send(body);
    },
  );
}

/**
 * `/mcp`: a Model Context Protocol server over Streamable HTTP (the official SDK, stateless, JSON
 * answers), behind the same token as every route (the `onRequest` check runs before this handler).
 * Its tools are tools.ts's table over the OpenAPI document; a tool call is the route's request made
 * with `app.inject` and the caller's own credentials, so validation, logic, errors and
 * authorisation are exactly the route's. A tool whose route is a direct route
 * (http/direct-routes.ts: search_devices) calls the route's one function instead, validated by the
 * route's own compiled schema, answering the same bytes without a second pass through Fastify. An
 * answer of 4xx/5xx is a tool result with `isError` and the route's error body as its text.
 *
 * The ordinary request (one JSON-RPC request other than `initialize`, with the headers the
 * transport requires) goes to one SDK `Server` kept for the app's life, through a transport of
 * netkeep's own (request-transport.ts): building a server, the SDK's stateless transport and its
 * Fetch objects for every call cost more than the call. Everything else (initialize,
 * notifications, batches, bad messages or headers) goes to a server and the SDK's own stateless
 * transport made for that request, which answers it as the SDK does.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import {
  CallToolRequestSchema,
  JSONRPCRequestSchema,
  ListToolsRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCRequest,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../http/app.js';
import type { DirectOutcome } from '../http/direct-routes.js';
import { ApiError, errorBody } from '../http/errors.js';
import { ErrorRef } from '../http/schemas.js';
import { RequestTransport } from './request-transport.js';
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

/**
 * The message of an ordinary request, or undefined: one JSON-RPC request (not a batch, not
 * `initialize`) that passes every check the SDK's stateless transport makes before it dispatches a
 * request (Accept, Content-Type, the protocol version header, the message's schema), so that the
 * shared server answers exactly what that transport would.
 */
function ordinaryRequest(request: FastifyRequest): JSONRPCRequest | undefined {
  const accept = request.headers.accept;
  if (accept === undefined || !accept.includes('application/json') || !accept.includes('text/event-stream'))
    return undefined;
  if (!isJsonContentType(request.headers['content-type'])) return undefined;
  const version = request.headers['mcp-protocol-version'];
  if (
    version !== undefined &&
    (typeof version !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version))
  )
    return undefined;
  const parsed = JSONRPCRequestSchema.safeParse(request.body);
  return parsed.success && parsed.data.method !== 'initialize' ? parsed.data : undefined;
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

  // tools/list's answer, the same for every request.
  const listTools = () =>
    [...toolMap().values()].map(({ name, description, inputSchema }) => ({ name, description, inputSchema }));
  let listed: ReturnType<typeof listTools> | undefined;
  const toolList = (): ReturnType<typeof listTools> => (listed ??= listTools());

  // The tools whose route is a direct route (http/direct-routes.ts): called as a function of the
  // body, validated by the route's own compiled schema, without a second request through Fastify.
  // The caller's authorisation is the /mcp request's: the same check as every route, and a POST
  // (a session cookie needs this server's Origin), so whoever may call /mcp may call those routes.
  let direct: ReadonlyMap<string, (body: unknown) => Promise<DirectOutcome>> | undefined;
  const directOf = (tool: Tool) => {
    direct ??= new Map(
      [...toolMap().values()].flatMap((t) => {
        const run = app.directRoutes.find(t.method, t.path);
        return run === undefined ? [] : [[t.name, run] as const];
      }),
    );
    return direct.get(tool.name);
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
    const run = directOf(tool);
    if (run !== undefined) {
      const answer = await run(made.body);
      if (answer.unexpected !== undefined) request.log.error({ err: answer.unexpected }, 'unexpected error');
      const body = typeof answer.body === 'string' ? answer.body : answer.body.toString('utf8');
      return text(body, answer.status >= 400);
    }
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

  /** A server whose tool calls are made for the HTTP request `requestOf` names. */
  const newServer = (requestOf: (id: RequestId) => FastifyRequest | undefined): McpServer['server'] => {
    // The SDK's low-level server: the tools are JSON Schemas already (the routes'), which
    // McpServer's own tool registry would want as zod schemas.
    const { server } = new McpServer(
      { name: 'netkeep', version },
      { capabilities: { tools: {} }, jsonSchemaValidator },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: toolList() }));
    server.setRequestHandler(CallToolRequestSchema, (message, extra) => {
      const request = requestOf(extra.requestId);
      if (request === undefined) throw new Error('MCP: a tool call without its HTTP request');
      return call(request, message.params.name, message.params.arguments ?? {});
    });
    return server;
  };

  // The server of ordinary requests, kept for the app's life.
  const transport = new RequestTransport<FastifyRequest>();
  const shared = newServer((id) => transport.contextOf(id));
  await shared.connect(transport);
  app.addHook('onClose', async () => {
    await shared.close();
  });

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
      const plain: FastifyReply = reply;
      const message = ordinaryRequest(request);
      if (message !== undefined) {
        const answer = await transport.request(message, request);
        return plain.code(200).header('content-type', 'application/json').send(JSON.stringify(answer));
      }
      const server = newServer(() => request);
      const perRequest = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      await server.connect(perRequest);
      let response: Response;
      let body: string;
      try {
        response = await perRequest.handleRequest(
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
      void plain.code(response.status);
      response.headers.forEach((value, name) => {
        void plain.header(name, value);
      });
      return plain.send(body);
    },
  );
}

/**
 * The MCP tools, generated from the OpenAPI document: the one table below names each tool (as
 * NetAlertX's MCP server names it, server/api_server/api_server_start.py and docs/API_MCP.md) and
 * the operation it is; its description and input schema are that operation's summary and
 * parameters, and a call is a request to that route. No tool has logic of its own: validation,
 * errors and answers are the route's.
 */

/** One operation of the OpenAPI document, as far as tools need it. */
export interface OpenApiOperation {
  readonly summary?: string;
  readonly description?: string;
  readonly parameters?: readonly {
    readonly name: string;
    readonly in: string;
    readonly required?: boolean;
    readonly description?: string;
    readonly schema?: Readonly<Record<string, unknown>>;
  }[];
  readonly requestBody?: {
    readonly content?: Readonly<Record<string, { readonly schema?: Readonly<Record<string, unknown>> }>>;
  };
}

export interface OpenApiDocument {
  readonly paths?: Readonly<Record<string, Readonly<Record<string, OpenApiOperation>>>>;
}

/** Each tool and its operation (method and OpenAPI path). */
export const toolOperations = [
  { name: 'search_devices', method: 'POST', path: '/devices/search' },
  { name: 'get_device_info', method: 'GET', path: '/device/{mac}' },
  { name: 'list_devices', method: 'POST', path: '/devices/by-status' },
  { name: 'get_latest_device', method: 'GET', path: '/devices/latest' },
  { name: 'get_network_topology', method: 'GET', path: '/devices/network/topology' },
  { name: 'get_recent_alerts', method: 'POST', path: '/events/recent' },
  { name: 'get_last_events', method: 'POST', path: '/events/last' },
  { name: 'set_device_alias', method: 'POST', path: '/device/{mac}/set-alias' },
  { name: 'get_open_ports', method: 'POST', path: '/device/open_ports' },
  { name: 'trigger_scan', method: 'POST', path: '/nettools/trigger-scan' },
  { name: 'wol_wake_device', method: 'POST', path: '/nettools/wakeonlan' },
  { name: 'run_nmap_scan', method: 'POST', path: '/nettools/nmap' },
] as const;

export type ToolMethod = (typeof toolOperations)[number]['method'];

/** Where each argument of a tool goes in the request. */
export type ArgumentPlace = 'path' | 'query' | 'body';

export interface Tool {
  readonly name: string;
  readonly description: string;
  /** JSON Schema of the arguments: path and query parameters and body fields, side by side. */
  readonly inputSchema: {
    readonly type: 'object';
    readonly properties: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
    readonly required: readonly string[];
    readonly additionalProperties: false;
  };
  readonly method: ToolMethod;
  readonly path: string;
  readonly places: ReadonlyMap<string, ArgumentPlace>;
}

/** The tools of the table, each from its operation in `document`; a missing operation throws. */
export function buildTools(document: OpenApiDocument): Tool[] {
  return toolOperations.map(({ name, method, path }) => {
    const operation = document.paths?.[path]?.[method.toLowerCase()];
    if (operation === undefined) throw new Error(`MCP tool ${name}: no operation ${method} ${path}`);
    const properties: Record<string, Readonly<Record<string, unknown>>> = {};
    const required: string[] = [];
    const places = new Map<string, ArgumentPlace>();
    for (const parameter of operation.parameters ?? []) {
      if (parameter.in !== 'path' && parameter.in !== 'query') continue;
      properties[parameter.name] = {
        ...(parameter.schema ?? { type: 'string' }),
        ...(parameter.description === undefined ? {} : { description: parameter.description }),
      };
      places.set(parameter.name, parameter.in);
      if (parameter.required === true) required.push(parameter.name);
    }
    const body = operation.requestBody?.content?.['application/json']?.schema;
    const bodyProperties = (body?.properties ?? {}) as Record<string, Readonly<Record<string, unknown>>>;
    for (const [field, schema] of Object.entries(bodyProperties)) {
      properties[field] = schema;
      places.set(field, 'body');
    }
    if (Array.isArray(body?.required)) required.push(...(body.required as string[]));
    return {
      name,
      description: [operation.summary, operation.description]
        .filter((text): text is string => text !== undefined && text !== '')
        .map((text) => (/[.!?)]$/.test(text) ? text : `${text}.`))
        .join(' '),
      inputSchema: { type: 'object', properties, required, additionalProperties: false },
      method,
      path,
      places,
    };
  });
}

export interface ToolRequest {
  readonly method: ToolMethod;
  readonly url: string;
  /** The JSON body (POST only). */
  readonly body: Record<string, unknown> | undefined;
}

/**
 * The request a call is: path parameters into the path, query parameters into the query string,
 * every other argument into the JSON body, where the route's own schema judges it (an unknown
 * field is the route's 400). What cannot make a request (a path parameter absent or not text, an
 * argument a GET operation has no parameter for) is returned as the reason, in the words of the
 * routes' validator.
 */
export function toolRequest(tool: Tool, args: Readonly<Record<string, unknown>>): ToolRequest | string {
  let url = tool.path;
  const query = new URLSearchParams();
  const body: Record<string, unknown> = {};
  for (const name of tool.places.keys())
    if (tool.places.get(name) === 'path' && !(name in args)) return `field '${name}' is required`;
  for (const [name, value] of Object.entries(args)) {
    const place = tool.places.get(name) ?? (tool.method === 'GET' ? undefined : 'body');
    if (place === undefined) return `unknown field '${name}'`;
    if (place === 'body') {
      body[name] = value;
      continue;
    }
    if (typeof value !== 'string') return `field '${name}' must be string`;
    if (place === 'path') url = url.replace(`{${name}}`, encodeURIComponent(value));
    else query.append(name, value);
  }
  const search = query.toString();
  return {
    method: tool.method,
    url: search === '' ? url : `${url}?${search}`,
    body: tool.method === 'POST' ? body : undefined,
  };
}

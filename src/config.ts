/**
 * Configuration: every environment variable netkeep reads, declared once with its default and
 * meaning. README and docs/configuration.md list the same table; a test keeps them in step.
 * Values come from the process environment, then from an optional `.env` file in the working
 * directory (the environment wins).
 */
import { eventTypes, type EventType } from './devices/history.js';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ipVersion, parseIpPort, parseScanTarget, type IpPort } from './validation.js';
import { parseLeaseSpecs, type LeaseFileSpec } from './names/leases/reader.js';
import { parseStoreUrl } from './store/postgres/pool.js';

type Parser<T> = (raw: string, name: string) => T;

/**
 * How much of a value GET /settings may show: `secret`, none of it; `secret-path`, a URL's scheme
 * and host only (webhook, ntfy and Apprise URLs carry their secret in the path). Any URL's
 * password and query string are hidden whatever this says.
 */
type Secrecy = 'secret' | 'secret-path';

interface VariableSpec<T> {
  readonly default: string;
  readonly description: string;
  readonly parse: Parser<T>;
  readonly secrecy?: Secrecy;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const text: Parser<string> = (raw) => raw;

function integer(min: number, max: number): Parser<number> {
  return (raw, name) => {
    if (!/^[0-9]+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got '${raw}'`);
    const value = Number(raw);
    if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}`);
    return value;
  };
}

const ipv4: Parser<string> = (raw, name) => {
  if (ipVersion(raw) === 4) return raw;
  throw new ConfigError(`${name} must be an IPv4 address, got '${raw}'`);
};

/** A comma-separated list of IPv4 addresses (empty: none), each in the strict dotted form. */
const ipv4List: Parser<readonly string[]> = (raw, name) => {
  const items = raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  items.forEach((item, index) => {
    // The value is named by position, never echoed: it may be hostile text.
    if (ipVersion(item) !== 4) throw new ConfigError(`${name}: item ${index + 1} is not an IPv4 address`);
  });
  return [...new Set(items)];
};

const httpUrl: Parser<URL> = (raw, name) => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an http or https URL, got '${raw}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(`${name} must be an http or https URL, got '${raw}'`);
  return url;
};

/** Empty (system resolver: undefined), or an IP address with an optional port: 192.168.1.1:5353, [::1]:53. */
const dnsServer: Parser<IpPort | undefined> = (raw, name) => {
  if (raw === '') return undefined;
  const parsed = parseIpPort(raw);
  if (parsed !== null) return parsed;
  throw new ConfigError(
    `${name} must be an IP address, optionally with a port (e.g. 192.168.1.1:5353), got '${raw}'`,
  );
};

/** Empty (channel off), or a URL with one of the given schemes; user:password in it is allowed. */
function optionalUrl(...schemes: string[]): Parser<string> {
  return (raw, name) => {
    if (raw === '') return raw;
    const wanted = `${name} must be empty or a ${schemes.map((s) => `${s}//`).join(' or ')} URL`;
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      // The value may hold a password: name the variable, never echo it.
      throw new ConfigError(`${wanted}; the value given is not a URL`);
    }
    if (!schemes.includes(url.protocol) || url.hostname === '')
      throw new ConfigError(`${wanted}; the value given has scheme '${url.protocol}'`);
    return raw;
  };
}

/** Notifications about a probe, not about a device: never rows of Events. */
export const probeNoticeTypes = ['Probe Offline', 'Probe Online'] as const;
export type ProbeNoticeType = (typeof probeNoticeTypes)[number];

/**
 * The event types that can be notified (every type the scanner writes, and the probes' notices);
 * NOTIFY_EVENTS names a subset.
 */
export const notifiableEventTypes = [...eventTypes, ...probeNoticeTypes] as const;
export type NotifiableEventType = EventType | ProbeNoticeType;

/** `all`, or a comma-separated list of event types (in any order; returned in the canonical order). */
const eventTypeList: Parser<readonly NotifiableEventType[]> = (raw, name) => {
  if (raw.trim() === 'all') return notifiableEventTypes;
  const items = raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  for (const item of items)
    if (!(notifiableEventTypes as readonly string[]).includes(item))
      throw new ConfigError(
        `${name}: unknown event type '${item}'; known: all, or a list of ${notifiableEventTypes.join(', ')}`,
      );
  return notifiableEventTypes.filter((type) => items.includes(type));
};

/** An MQTT topic prefix: one or more levels, no wildcards, no empty level. */
const topicPrefix: Parser<string> = (raw, name) => {
  if (/^[^#+/\s]+(?:\/[^#+/\s]+)*$/.test(raw) && raw.length <= 200) return raw;
  throw new ConfigError(
    `${name} must be an MQTT topic prefix such as 'netkeep' (no '+', '#', spaces or empty levels), got '${raw}'`,
  );
};

/**
 * Browser origins allowed to call the API (CORS): a comma-separated list of exact origins
 * (`scheme://host[:port]`, no path). Empty: CORS off. `*` is refused: every origin would then be
 * let in with the console's cookie session next to the bearer token.
 */
const origins: Parser<string[]> = (raw, name) => {
  const list = raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of list) {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== entry)
      throw new ConfigError(
        `${name} must be a comma-separated list of origins such as http://homer.lan:8080 (scheme, host, optional port; no path, no '*'), got '${entry}'`,
      );
  }
  return list;
};

/** The addresses a client may be named by proxy-addr (Fastify's trustProxy) besides IPs and CIDRs. */
const proxyRangeNames = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * Which peers may tell netkeep the client's address and scheme (X-Forwarded-For/-Proto/-Host), as
 * Fastify's `trustProxy` takes it: `off` (none: the headers are ignored), `on` (every peer: only
 * when nothing but the proxy can reach netkeep), or a comma-separated list of proxy addresses,
 * CIDR ranges and the names loopback, linklocal, uniquelocal.
 */
const trustProxy: Parser<boolean | readonly string[]> = (raw, name) => {
  const value = raw.trim();
  if (value === 'off') return false;
  if (value === 'on') return true;
  const list = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (list.length === 0)
    throw new ConfigError(
      `${name} must be off, on, or a comma-separated list of proxy addresses or CIDR ranges`,
    );
  for (const entry of list)
    if (!proxyRangeNames.includes(entry) && parseScanTarget(entry) === null)
      throw new ConfigError(
        `${name}: '${entry}' is not an IP address, a CIDR range or one of ${proxyRangeNames.join(', ')} (or use off / on)`,
      );
  return list;
};

/** DHCP_LEASES: a comma list of format:path (src/names/leases/reader.ts). */
const leaseFiles: Parser<readonly LeaseFileSpec[]> = (raw, name) => {
  const specs = parseLeaseSpecs(raw);
  if (typeof specs === 'string') throw new ConfigError(`${name}: ${specs}`);
  return specs;
};

function oneOf<const T extends string>(...values: T[]): Parser<T> {
  return (raw, name) => {
    if ((values as string[]).includes(raw)) return raw as T;
    throw new ConfigError(`${name} must be one of ${values.join(', ')}, got '${raw}'`);
  };
}

/** The one on/off switch, read as a boolean. */
const onOffText = oneOf('on', 'off');
const onOff: Parser<boolean> = (raw, name) => onOffText(raw, name) === 'on';

function spec<T>(
  defaultValue: string,
  description: string,
  parse: Parser<T>,
  secrecy?: Secrecy,
): VariableSpec<T> {
  return secrecy === undefined
    ? { default: defaultValue, description, parse }
    : { default: defaultValue, description, parse, secrecy };
}

/** A site's name: what devSite holds and metrics label (printable, no control characters). */
const siteName: Parser<string> = (raw, name) => {
  if (!/^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$/.test(raw))
    throw new ConfigError(
      `${name} must be 1-64 letters, digits, spaces, dots, dashes or underscores, got '${raw}'`,
    );
  return raw;
};

/** Empty (SQLite), or a PostgreSQL URL as the store reads it; a mistake never repeats the password. */
const databaseUrl: Parser<string> = (raw, name) => {
  if (raw === '') return '';
  try {
    parseStoreUrl(raw);
  } catch (err) {
    throw new ConfigError(`${name} ${(err as Error).message}`);
  }
  return raw;
};

/** The single list of configuration variables. */
export const variables = {
  API_TOKEN: spec(
    '(generated)',
    'Bearer token. Unset: generated once and kept in $DATA_DIR/api_token (mode 0600).',
    text,
    'secret',
  ),
  PORT: spec('20212', 'TCP port to listen on.', integer(0, 65535)),
  HOST: spec('0.0.0.0', 'Address to listen on.', text),
  DATA_DIR: spec('./data', 'Directory for netkeep.db and api_token.', text),
  DATABASE_URL: spec(
    '',
    'PostgreSQL store instead of SQLite: postgres://user:password@host:port/database, optionally ?sslmode=require (docs/postgresql.md). Empty: SQLite at $DATA_DIR/netkeep.db.',
    databaseUrl,
  ),
  LOG_LEVEL: spec(
    'info',
    'pino log level. One line per answer: successful reads (GET/HEAD) at debug, writes and errors at info.',
    oneOf('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'),
  ),
  BODY_LIMIT: spec('65536', 'Largest request body in bytes (413 above it).', integer(1024, 16 * 1024 * 1024)),
  IMPORT_BODY_LIMIT: spec(
    '67108864',
    'Largest body of POST /devices/import in bytes (413 above it), read as it arrives; every other route keeps BODY_LIMIT.',
    integer(1024, 1024 * 1024 * 1024),
  ),
  REQUEST_TIMEOUT_MS: spec(
    '30000',
    'Time to receive a whole request, headers and body (408 after it; answers are not limited).',
    integer(1000, 3_600_000),
  ),
  MAX_CONNECTIONS: spec(
    '256',
    'Client connections served at once; further ones are closed at once.',
    integer(1, 1_000_000),
  ),
  MAX_STREAMS: spec(
    '64',
    'GET /stream clients at once (503 STREAM_LIMIT past it). Below MAX_CONNECTIONS; unset: 64, or MAX_CONNECTIONS / 4 if smaller.',
    integer(1, 1_000_000),
  ),
  SHUTDOWN_TIMEOUT_MS: spec('10000', 'How long SIGTERM waits for requests in flight.', integer(0, 600_000)),
  TOOL_PATH: spec(
    '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    'Directories searched once at start for nmap, traceroute, nslookup, speedtest-cli, arp-scan and ip.',
    text,
  ),
  TOOL_CONCURRENCY: spec('4', 'Tool commands that may run at once.', integer(1, 64)),
  TOOL_QUEUE: spec(
    '8',
    'Tool requests that may wait for a slot; beyond that 429 with Retry-After.',
    integer(0, 1000),
  ),
  TOOL_OUTPUT_LIMIT: spec(
    '1048576',
    'Bytes of stdout kept per command; beyond that the command is stopped.',
    integer(1024, 64 * 1024 * 1024),
  ),
  WOL_BROADCAST: spec('255.255.255.255', 'Default Wake-on-LAN broadcast address (IPv4).', ipv4),
  WOL_PORT: spec('9', 'Default Wake-on-LAN UDP port.', integer(1, 65535)),
  TRACEROUTE_TIMEOUT_MS: spec('60000', 'traceroute time limit (504 after it).', integer(1000, 3_600_000)),
  TRACEROUTE_MAX_HOPS: spec('30', 'traceroute -m.', integer(1, 64)),
  NSLOOKUP_TIMEOUT_MS: spec('15000', 'nslookup time limit.', integer(1000, 3_600_000)),
  DNS_SERVER: spec(
    '',
    'Resolver for nslookup and nmap reverse lookups, as IP, IP:port or [IPv6]:port (nmap only asks port 53: with another port it does none). Empty: the system resolver.',
    dnsServer,
  ),
  NMAP_MAX_HOSTS: spec(
    '4096',
    'Largest number of addresses one nmap scan may cover.',
    integer(1, 16_777_216),
  ),
  NMAP_TIMEOUT_MS: spec('600000', 'nmap time limit.', integer(1000, 24 * 3_600_000)),
  SPEEDTEST_BACKEND: spec(
    'auto',
    'auto (speedtest-cli when installed, else builtin), speedtest-cli or builtin.',
    oneOf('auto', 'speedtest-cli', 'builtin'),
  ),
  SPEEDTEST_SERVER_URL: spec(
    'https://speed.cloudflare.com',
    'Server of the builtin backend (GET /__down?bytes=N, POST /__up).',
    httpUrl,
  ),
  SPEEDTEST_STREAMS: spec('4', 'Parallel HTTP streams of the builtin backend.', integer(1, 64)),
  SPEEDTEST_DURATION_MS: spec(
    '8000',
    'Time budget of each builtin phase (download, upload).',
    integer(500, 120_000),
  ),
  SPEEDTEST_TIMEOUT_MS: spec('120000', 'Time limit of a whole speed test.', integer(1000, 3_600_000)),
  INTERNETINFO_URL: spec('https://ipinfo.io/json', 'IP information service (ipinfo.io JSON shape).', httpUrl),
  INTERNETINFO_TIMEOUT_MS: spec('10000', 'internetinfo time limit.', integer(100, 600_000)),
  SCAN_SUBNETS: spec(
    '',
    'Presence scanning: comma-separated cidr@interface[@gateway] list (the gateway the security watch checks; default from the routes). Empty: scanning off.',
    text,
  ),
  SCAN_INTERVAL: spec('300', 'Seconds between the starts of presence scan cycles.', integer(5, 86_400)),
  SCAN_MISSES_BEFORE_ABSENT: spec(
    '1',
    'Consecutive cycles a device may be missed before it counts as gone.',
    integer(1, 1000),
  ),
  SCAN_TOOL: spec(
    'auto',
    'auto (arp-scan when installed, else nmap -sn), arp-scan or nmap.',
    oneOf('auto', 'arp-scan', 'nmap'),
  ),
  SCAN_TIMEOUT_MS: spec('120000', 'Time limit of one subnet discovery command.', integer(1000, 3_600_000)),
  SLEEP_MINUTES: spec(
    '30',
    'A device with devCanSleep stays present (sleeping) for this long after its last sighting; then it counts as gone.',
    integer(1, 10_080),
  ),
  FLAP_THRESHOLD: spec(
    '6',
    'Connected/Disconnected/Device Down/Down Reconnected events within FLAP_WINDOW_MINUTES that make a device flapping.',
    integer(2, 1000),
  ),
  FLAP_WINDOW_MINUTES: spec('60', 'The window FLAP_THRESHOLD counts in.', integer(1, 10_080)),
  SCAN_IPV6: spec(
    'on',
    "on: after each subnet's discovery, an IPv6 all-nodes echo and the interface's neighbour table (IPv6 sightings); off: IPv4 only.",
    onOff,
  ),
  DHCP_LEASES: spec(
    '',
    'Naming: DHCP lease files to read, a comma list of format:path with format dnsmasq (also Pi-hole, OpenWrt), isc, kea or adguard and an absolute path. Empty: none.',
    leaseFiles,
  ),
  NAME_MDNS: spec(
    'on',
    "Naming: ask each device's mDNS responder (UDP 5353) for its name: on or off.",
    onOff,
  ),
  NAME_NETBIOS: spec('on', 'Naming: ask each device for its NetBIOS name (UDP 137): on or off.', onOff),
  RANDOM_MAC_LINK: spec(
    'on',
    'Link a random MAC new to the scan to an existing device by its DHCP client identifier or hostname (docs/random-macs.md): on or off.',
    onOff,
  ),
  NOTIFY_RANDOM_MAC: spec(
    'on',
    'Notify a New Device whose MAC is random and was not linked to a known device (off: guest phones stay quiet): on or off.',
    onOff,
  ),
  NAME_DNS: spec('on', 'Naming: reverse DNS (PTR) through DNS_SERVER; also fills devFQDN: on or off.', onOff),
  NAME_CONCURRENCY: spec('32', 'Naming: devices looked up at once.', integer(1, 1024)),
  NAME_TIMEOUT_MS: spec(
    '1500',
    'Naming: time each source has to answer for a device; a silent source is skipped until the next refresh.',
    integer(50, 60_000),
  ),
  NAME_REFRESH_MINUTES: spec(
    '60',
    'Naming: minutes before a device not named by a person is looked up again.',
    integer(1, 525_600),
  ),
  PORT_WATCH_MINUTES: spec(
    '360',
    'Security watch: minutes between port scans (nmap -F) of present devices with devWatchPorts; 0: off.',
    integer(0, 525_600),
  ),
  DHCP_SERVERS: spec(
    '',
    'Security watch: the trusted DHCP servers (comma-separated IPv4 list); an offer from any other is a Rogue DHCP event. Empty: the DHCP watch is off.',
    ipv4List,
  ),
  DHCP_WATCH_MINUTES: spec(
    '15',
    'Security watch: minutes between DHCPDISCOVER broadcasts on each scanned interface.',
    integer(1, 525_600),
  ),
  SSE_KEEPALIVE_MS: spec(
    '15000',
    'Interval of the comment line that keeps event streams open through proxies.',
    integer(10, 600_000),
  ),
  STREAM_REPLAY_EVENTS: spec(
    '1000',
    'Messages of GET /stream kept for replay to a client reconnecting with Last-Event-ID.',
    integer(0, 1_000_000),
  ),
  STREAM_CLIENT_BUFFER_BYTES: spec(
    '1048576',
    'Unsent bytes a GET /stream client may hold (a stalled reader); beyond that it is disconnected.',
    integer(1024, 256 * 1024 * 1024),
  ),
  HISTORY_DAYS: spec('365', 'Events and sessions older than this are pruned daily.', integer(1, 36_500)),
  NOTIFY_EVENTS: spec(
    'all',
    `Scan event types that may be notified: all, or a comma-separated list (${eventTypes.join(', ')}).`,
    eventTypeList,
  ),
  NOTIFY_MAX_ATTEMPTS: spec(
    '10',
    'Delivery attempts per notification before it is marked failed.',
    integer(1, 100),
  ),
  NOTIFY_TIMEOUT_MS: spec('10000', 'Time limit of one delivery attempt.', integer(100, 600_000)),
  NOTIFY_RETENTION_DAYS: spec(
    '30',
    'Sent, failed and skipped notifications older than this are pruned daily; pending ones stay.',
    integer(1, 36_500),
  ),
  NOTIFY_RETRY_BASE_MS: spec(
    '15000',
    'Wait before the first retry of a failed delivery; doubled after each further failure (at most 1 hour).',
    integer(100, 30_000),
  ),
  NOTIFY_WEBHOOK_URL: spec(
    '',
    'Webhook channel: JSON POSTed to this http(s) URL. Empty: off.',
    optionalUrl('http:', 'https:'),
    'secret-path',
  ),
  NOTIFY_WEBHOOK_SECRET: spec(
    '',
    'Webhook channel: HMAC-SHA256 key of the X-Netkeep-Signature header. Empty: unsigned.',
    text,
    'secret',
  ),
  NOTIFY_NTFY_URL: spec(
    '',
    'ntfy channel: topic URL, e.g. https://ntfy.sh/<topic> or a self-hosted one. Empty: off.',
    optionalUrl('http:', 'https:'),
    'secret-path',
  ),
  NOTIFY_NTFY_TOKEN: spec(
    '',
    'ntfy channel: access token sent as Authorization: Bearer. Empty: none.',
    text,
    'secret',
  ),
  NOTIFY_APPRISE_URL: spec(
    '',
    'Apprise API channel: notify URL, e.g. http://apprise:8000/notify/netkeep. Empty: off.',
    optionalUrl('http:', 'https:'),
    'secret-path',
  ),
  MQTT_URL: spec(
    '',
    'MQTT channel and Home Assistant discovery: mqtt:// or mqtts:// broker URL, user and password in it. Empty: off.',
    optionalUrl('mqtt:', 'mqtts:'),
  ),
  MQTT_TOPIC_PREFIX: spec(
    'netkeep',
    "MQTT: prefix of netkeep's own topics (status, device state, events).",
    topicPrefix,
  ),
  MQTT_DISCOVERY_PREFIX: spec('homeassistant', 'MQTT: Home Assistant discovery prefix.', topicPrefix),
  TRUST_PROXY: spec(
    'off',
    'Reverse proxies whose X-Forwarded-For/-Proto/-Host are believed (client address, https): off, on (every peer), or a list of addresses/CIDRs.',
    trustProxy,
  ),
  CORS_ORIGINS: spec(
    '',
    'Browser origins allowed to call the API (CORS), comma-separated, e.g. http://homer.lan:8080. Empty: CORS off.',
    origins,
  ),
  SITE_NAME: spec(
    'local',
    "Site of this server's own scan cycles (devSite of the devices they see); a probe's site is set on the hub (POST /probes).",
    siteName,
  ),
  PROBE_HUB_URL: spec(
    '',
    "Probe mode: the hub's base URL (http or https). With PROBE_TOKEN this server scans, names and uploads each cycle to the hub, and keeps no inventory. Empty: not a probe.",
    optionalUrl('http:', 'https:'),
  ),
  PROBE_TOKEN: spec('', "Probe mode: the probe's token, as POST /probes on the hub gave it.", text, 'secret'),
  PROBE_SPOOL_MAX: spec(
    '10000',
    "Probe mode: cycles kept on disk while the hub does not take them; past it the oldest are dropped (and counted in the next upload's droppedCycles).",
    integer(1, 1_000_000),
  ),
  PROBE_OFFLINE_MINUTES: spec(
    '15',
    'Hub: minutes without a cycle after which a probe is offline (one Probe Offline notification; its devices keep their state).',
    integer(1, 10_080),
  ),
} as const;

type Variables = typeof variables;
export type VariableName = keyof Variables;
/** Where a variable's value came from. */
export type ValueSource = 'environment' | '.env' | 'default';

export type Config = { readonly [K in VariableName]: ReturnType<Variables[K]['parse']> } & {
  /** True when API_TOKEN was not set and the token must come from $DATA_DIR/api_token. */
  readonly tokenFromFile: boolean;
  /** Each variable's text as given (or its default) and where it came from: GET /settings. */
  readonly given?: Readonly<Record<VariableName, { readonly raw: string; readonly source: ValueSource }>>;
};

/** Parses a `.env` file: KEY=VALUE lines, `#` comments, optional single or double quotes. */
export function parseDotEnv(content: string): Record<string, string> {
  const result: Record<string, string> = {};
  for (const line of content.split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!match?.[1] || line.trimStart().startsWith('#')) continue;
    let value = match[2] ?? '';
    const quoted = /^(['"])(.*)\1$/.exec(value);
    value = quoted ? (quoted[2] ?? '') : value.replace(/\s+#.*$/, '');
    result[match[1]] = value;
  }
  return result;
}

/** Builds the configuration from an environment (default: process.env plus ./.env). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  const dotEnvPath = resolve(cwd, '.env');
  const fileValues = existsSync(dotEnvPath) ? parseDotEnv(readFileSync(dotEnvPath, 'utf8')) : {};
  const values: Record<string, unknown> = {};
  const given: Record<string, { raw: string; source: ValueSource }> = {};
  for (const [name, variable] of Object.entries(variables) as [VariableName, VariableSpec<unknown>][]) {
    const raw = env[name] ?? fileValues[name];
    given[name] = {
      raw: raw ?? variable.default,
      source: env[name] !== undefined ? 'environment' : raw !== undefined ? '.env' : 'default',
    };
    if (name === 'API_TOKEN') {
      // Set but empty would start a server that refuses every request: refuse it here instead.
      if (raw !== undefined && raw.trim() === '')
        throw new ConfigError(
          'API_TOKEN is set but empty: set a token, or remove the variable to have one generated in $DATA_DIR/api_token',
        );
      values[name] = raw ?? '';
      continue;
    }
    values[name] = variable.parse(raw ?? variable.default, name);
  }
  // Streams must leave connections for everything else: a MAX_STREAMS given at or above
  // MAX_CONNECTIONS is refused, and the default is at most a quarter of MAX_CONNECTIONS.
  const maxConnections = values.MAX_CONNECTIONS as number;
  if ((env.MAX_STREAMS ?? fileValues.MAX_STREAMS) === undefined)
    values.MAX_STREAMS = Math.max(1, Math.min(values.MAX_STREAMS as number, Math.floor(maxConnections / 4)));
  else if ((values.MAX_STREAMS as number) >= maxConnections)
    throw new ConfigError(
      `MAX_STREAMS must be below MAX_CONNECTIONS (${maxConnections}): streams holding every connection would leave none for /health or writes`,
    );
  // Probe mode needs both; a token not of POST /probes's form would be refused by every hub.
  if ((values.PROBE_HUB_URL === '') !== (values.PROBE_TOKEN === ''))
    throw new ConfigError('PROBE_HUB_URL and PROBE_TOKEN go together: set both (probe mode) or neither');
  if (values.PROBE_TOKEN !== '' && !/^[0-9a-f-]{36}\.[A-Za-z0-9_-]{43}$/.test(values.PROBE_TOKEN as string))
    throw new ConfigError(
      "PROBE_TOKEN is not a probe token (the 'token' that POST /probes on the hub answered)",
    );
  values.tokenFromFile = env.API_TOKEN === undefined && fileValues.API_TOKEN === undefined;
  values.given = given;
  return values as Config;
}

/** Groups of the settings page, by name prefix (first match wins; the rest are "Server"). */
const settingGroups: readonly (readonly [group: string, prefixes: readonly string[]])[] = [
  [
    'Network tools',
    ['TOOL_', 'WOL_', 'TRACEROUTE_', 'NSLOOKUP_', 'DNS_', 'NMAP_', 'SPEEDTEST_', 'INTERNETINFO_'],
  ],
  ['Presence scanning', ['SCAN_', 'HISTORY_']],
  ['Live updates', ['SSE_', 'STREAM_', 'MAX_STREAMS']],
  ['Notifications', ['NOTIFY_', 'MQTT_']],
  ['Security', ['API_TOKEN', 'TRUST_PROXY', 'CORS_']],
  ['Probes and sites', ['PROBE_', 'SITE_NAME']],
];

export const hidden = '••••';

/**
 * A value as GET /settings may show it: a secret as ••••; in a URL, the password and the query
 * string as ••••, and for `secret-path` variables the path too. A value that is not a URL but
 * has `user:password@` in it is hidden whole (it cannot be told apart safely).
 */
export function shownValue(raw: string, secrecy: Secrecy | undefined): string {
  if (raw === '') return '';
  if (secrecy === 'secret') return hidden;
  let url: URL | undefined;
  try {
    url = raw.includes('://') ? new URL(raw) : undefined;
  } catch {
    url = undefined;
  }
  if (url === undefined) return /:[^/@\s]*@/.test(raw) || secrecy !== undefined ? hidden : raw;
  const user = url.username === '' ? '' : `${url.username}${url.password === '' ? '' : `:${hidden}`}@`;
  const path = secrecy === 'secret-path' ? (url.pathname === '/' ? '' : `/${hidden}`) : url.pathname;
  const query = url.search === '' ? '' : `?${hidden}`;
  return `${url.protocol}//${user}${url.host}${path === '/' && !raw.endsWith('/') ? '' : path}${query}`;
}

export interface Setting {
  readonly name: VariableName;
  readonly group: string;
  readonly description: string;
  /** The effective value, secrets hidden (see shownValue). */
  readonly value: string;
  readonly default: string;
  readonly source: ValueSource;
  readonly secret: boolean;
  /** Every variable is read once at start: a change takes a restart. */
  readonly restartRequired: true;
}

/** Every variable of the table with its effective value (secrets hidden) and where it came from. */
export function describeSettings(config: Config): Setting[] {
  return (Object.entries(variables) as [VariableName, VariableSpec<unknown>][]).map(([name, variable]) => {
    const given = config.given?.[name] ?? { raw: variable.default, source: 'default' as const };
    const parsed: unknown = config[name];
    // Numbers as parsed (MAX_STREAMS' default depends on MAX_CONNECTIONS); text as given.
    const effective = typeof parsed === 'number' ? String(parsed) : given.raw;
    return {
      name,
      group: settingGroups.find(([, prefixes]) => prefixes.some((p) => name.startsWith(p)))?.[0] ?? 'Server',
      description: variable.description,
      value: name === 'API_TOKEN' ? hidden : shownValue(effective, variable.secrecy),
      default: variable.default,
      source: given.source,
      secret: variable.secrecy !== undefined,
      restartRequired: true,
    };
  });
}

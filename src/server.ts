/**
 * Composition root: opens the database, resolves the token, builds the app and wires every feature
 * into it. `close()` is the graceful shutdown used by SIGTERM/SIGINT and by tests.
 */
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { Alerts } from './alerts/index.js';
import notificationsRoutes from './alerts/routes.js';
import backupRoutes from './backup/routes.js';
import { ChangeFeed } from './events.js';
import { relayFeed } from './feed-relay.js';
import compatRoutes from './compat/routes.js';
import newerCompatRoutes from './compat/newer-routes.js';
import deviceListRoutes from './devices/list-routes.js';
import deviceRoutes from './devices/routes.js';
import eventLogRoutes from './devices/event-log-routes.js';
import totalsRoutes from './devices/totals-routes.js';
import consoleRoutes from './http/console.js';
import settingsRoutes from './http/settings.js';
import { resolveToken } from './http/auth.js';
import { appVersion, buildApp, type App } from './http/app.js';
import { cleanupOrphans } from './nettools/orphans.js';
import { LiveHub } from './live/hub.js';
import liveRoutes from './live/routes.js';
import { Metrics } from './metrics/metrics.js';
import mcpRoutes from './mcp/routes.js';
import metricsRoutes, { instrumentRequests } from './metrics/routes.js';
import nettoolsRoutes from './nettools/routes.js';
import { ToolRunner, type ToolRunnerOptions } from './nettools/runner.js';
import type { RunTool } from './scanner/discovery.js';
import { interfaceProblem } from './scanner/link.js';
import scanRoutes from './scanner/routes.js';
import { HistoryRetention } from './scanner/retention.js';
import { DeviceNamer } from './names/namer.js';
import { NameResolver, type ResolverOptions } from './names/resolver.js';
import nameRoutes from './names/routes.js';
import { Scanner, scanTool } from './scanner/scanner.js';
import { openStore } from './store/index.js';
import { Probe } from './probes/probe.js';
import probeStatusRoutes from './probes/probe-routes.js';
import { ProbeHub } from './probes/hub.js';
import probeRoutes from './probes/routes.js';
import { SecurityCycleWatch } from './watch/cycle.js';
import { PortWatch } from './watch/ports.js';
import { DhcpWatch } from './watch/dhcp.js';
import watchRoutes from './watch/routes.js';
import type { WatchRunTool } from './watch/tool.js';

export interface Server {
  readonly app: App;
  readonly token: string;
  /** Where the generated token is kept, when it was not configured. */
  readonly tokenFile: string | undefined;
  /** What changed, after it was committed (API writes, scan cycles). */
  readonly feed: ChangeFeed;
  /** The alert engine: outbox, channels, delivery loop. */
  readonly alerts: Alerts;
  /** Prometheus metrics; the alert delivery reports each notification with `recordNotification`. */
  readonly metrics: Metrics;
  /** The security watch's scheduled scans (tests and the bench run them now). */
  readonly watch: { readonly ports: PortWatch; readonly dhcp: DhcpWatch };
  /** The probes' hub. */
  readonly probes: ProbeHub;
  /** Stops accepting, lets requests in flight finish (bounded), stops children, closes the database. */
  close(): Promise<void>;
}

/** arp-scan prints ~50 bytes per host: a /16 needs ~3 MB, more than TOOL_OUTPUT_LIMIT's default. */
const discoveryOutputLimit = 16 * 1024 * 1024;

/**
 * The one tool runner of a server, after the clean-up of the commands and temp files a killed
 * predecessor left behind (normally there are none).
 */
function startToolRunner(
  config: Config,
  logger: Logger,
  onOutcome?: ToolRunnerOptions['onOutcome'],
): ToolRunner {
  const leftovers = cleanupOrphans();
  if (leftovers.killed.length > 0 || leftovers.removed.length > 0)
    logger.warn(leftovers, 'removed what a previous server left behind');
  return new ToolRunner({
    toolPath: config.TOOL_PATH,
    concurrency: config.TOOL_CONCURRENCY,
    queue: config.TOOL_QUEUE,
    outputLimit: config.TOOL_OUTPUT_LIMIT,
    logger: logger.child({ component: 'nettools' }),
    ...(onOutcome === undefined ? {} : { onOutcome }),
  });
}

export interface ServerOptions {
  /** Test and bench seam: the ports the mDNS and NetBIOS name sources ask (stand-ins on loopback). */
  readonly testOnlyNamePorts?: ResolverOptions['testOnlyPorts'];
  /** Test seam: how often the probes' offline watch looks, in ms (default 15 s). */
  readonly testOnlyProbeCheckMs?: number;
  /** Test seam: the probes hub's clock (the offline watch, the time checks of uploads). */
  readonly testOnlyProbeClock?: () => Date;
}

export async function createServer(
  config: Config,
  logger: Logger,
  options: ServerOptions = {},
): Promise<Server> {
  const store = await openStore(config, logger.child({ component: 'store' }));
  const { token, file } = resolveToken(config.API_TOKEN, config.tokenFromFile, config.DATA_DIR);
  const feed = new ChangeFeed(logger.child({ component: 'feed' }));
  // Several servers on one database: each one's /stream carries every server's changes (their
  // caches follow the store's change tracking on their own).
  const relay =
    store.servers === undefined
      ? undefined
      : relayFeed(feed, store.servers, logger.child({ component: 'feed-relay' }));
  const { devices, presence } = store;
  const probeStore = store.probes;
  const metrics = new Metrics({
    counts: () => devices.counts(),
    readouts: store.readouts,
    feed,
    probes: () => probeStore.list(),
  });
  const app = await buildApp({
    token,
    bodyLimit: config.BODY_LIMIT,
    requestTimeoutMs: config.REQUEST_TIMEOUT_MS,
    maxConnections: config.MAX_CONNECTIONS,
    logger,
    health: () => store.health(),
    corsOrigins: config.CORS_ORIGINS,
    trustProxy: config.TRUST_PROXY,
    instrument: (routes) => {
      instrumentRequests(routes, metrics.requests);
    },
  });

  // Each feature is an encapsulated plugin: its schemas and hooks stay inside it.
  await app.register(deviceRoutes, { repository: devices, feed });
  await app.register(deviceListRoutes, { repository: devices });
  await app.register(totalsRoutes, { repository: devices });
  const eventLog = store.eventLog;
  await app.register(eventLogRoutes, { eventLog });
  await app.register(consoleRoutes, {});
  await app.register(backupRoutes, { backup: store.backup, dataDir: config.DATA_DIR });
  await app.register(settingsRoutes, { config });
  const compatStore = store.compat;
  await app.register(compatRoutes, {
    store: compatStore,
    devices,
    feed,
    importBodyLimit: config.IMPORT_BODY_LIMIT,
  });
  await app.register(newerCompatRoutes, { repository: devices, eventLog, store: compatStore });

  const runner = startToolRunner(config, logger, (tool, outcome) => {
    metrics.recordToolRun(tool, outcome);
  });
  await app.register(nettoolsRoutes, { config, runner });
  const missing = runner.missingPackages();
  if (missing.length > 0)
    logger.warn(
      { event: 'tools-missing', packages: missing },
      `OS tools missing, their endpoints answer 503: apt-get install ${missing.join(' ')}`,
    );

  // Presence discovery goes through the same runner as every tool (no shell, process-group kill,
  // concurrency limit). A non-zero exit is a result here: discovery reads the reason from stderr.
  const runTool: RunTool = (tool, args, { timeoutMs, signal }) =>
    runner.run({ tool, args, timeoutMs, signal, allowNonZeroExit: true, outputLimit: discoveryOutputLimit });
  const alerts = new Alerts({
    outboxStore: store.outbox,
    readouts: store.readouts,
    config,
    logger,
    feed,
    totals: () => devices.totals(),
    onNotification: (channel, status) => {
      metrics.recordNotification(channel, status);
    },
  });
  await app.register(notificationsRoutes, { alerts });

  const resolver = new NameResolver({ config, testOnlyPorts: options.testOnlyNamePorts });
  const namer = new DeviceNamer(resolver, devices, config.NAME_REFRESH_MINUTES);
  await app.register(nameRoutes, { namer, feed });

  // The security watch's commands: same runner; its scheduled scans run as background work.
  const watchRunTool: WatchRunTool = (tool, args, { timeoutMs, signal, background }) =>
    runner.run({ tool, args, timeoutMs, signal, background, allowNonZeroExit: true });
  const watchStore = store.watch;
  const scanner = new Scanner({
    devices,
    presence,
    config,
    logger: logger.child({ component: 'scanner' }),
    runTool,
    checkInterface: (iface) => interfaceProblem(iface),
    arpScanInstalled: runner.isInstalled('arp-scan'),
    feed,
    notifications: alerts.outbox,
    site: config.SITE_NAME,
    names: namer,
    watch: new SecurityCycleWatch({
      store: watchStore,
      runTool: watchRunTool,
      logger: logger.child({ component: 'watch' }),
    }),
    leases: resolver.leases.configured ? async () => (await resolver.leases.read()).byMac : undefined,
    // One server per site runs the scan loop; the others stand by (several servers, PostgreSQL).
    leader: store.servers?.lock(`scan:${config.SITE_NAME}`),
  });
  const portWatch = new PortWatch({
    store: watchStore,
    runTool: watchRunTool,
    logger: logger.child({ component: 'watch' }),
    minutes: config.PORT_WATCH_MINUTES,
    feed,
    notifications: alerts.outbox,
  });
  const dhcpWatch = new DhcpWatch({
    store: watchStore,
    presence,
    runTool: watchRunTool,
    discoveryTool: scanTool(config.SCAN_TOOL, runner.isInstalled('arp-scan')),
    subnets: scanner.subnets,
    trusted: config.DHCP_SERVERS,
    minutes: config.DHCP_WATCH_MINUTES,
    logger: logger.child({ component: 'watch' }),
    feed,
    notifications: alerts.outbox,
  });
  await app.register(watchRoutes, { store: watchStore, dhcp: dhcpWatch });
  await app.register(scanRoutes, { scanner, streams: { keepAliveMs: config.SSE_KEEPALIVE_MS } });
  const probes = new ProbeHub({
    store: probeStore,
    devices,
    presence,
    config,
    logger: logger.child({ component: 'probes' }),
    feed,
    notifications: alerts.outbox,
    onCycle: (probe, outcome) => {
      metrics.recordProbeCycle(probe.name, outcome);
    },
    testOnlyCheckMs: options.testOnlyProbeCheckMs,
    now: options.testOnlyProbeClock,
  });
  await app.register(probeRoutes, { hub: probes });

  const hub = new LiveHub({
    feed: relay?.feed ?? feed,
    replayLimit: config.STREAM_REPLAY_EVENTS,
    describeDevices: (macs) => store.readouts.summaries(macs),
  });
  await app.register(liveRoutes, {
    hub,
    keepAliveMs: config.SSE_KEEPALIVE_MS,
    clientBufferBytes: config.STREAM_CLIENT_BUFFER_BYTES,
    maxStreams: config.MAX_STREAMS,
  });
  await app.register(metricsRoutes, { metrics });
  await app.register(mcpRoutes, { version: appVersion });
  scanner.start();
  probes.start();
  portWatch.start();
  dhcpWatch.start();
  await alerts.start();
  const retention = new HistoryRetention({
    presence,
    days: config.HISTORY_DAYS,
    logger: logger.child({ component: 'retention' }),
  });
  retention.start();

  let closing: Promise<void> | undefined;
  async function close(): Promise<void> {
    closing ??= (async () => {
      const deadline = new Promise<void>((resolve) =>
        setTimeout(resolve, config.SHUTDOWN_TIMEOUT_MS).unref(),
      );
      const closed = app.close();
      await Promise.race([closed, deadline]);
      // Commands still running after the grace period are stopped (whole process groups); their
      // requests then answer 503 and the server finishes closing.
      await scanner.stop();
      await probes.stop();
      await portWatch.stop();
      await dhcpWatch.stop();
      await alerts.stop();
      await retention.stop();
      hub.close();
      metrics.close();
      await runner.killAll();
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
      relay?.stop();
      await store.close();
    })();
    return closing;
  }
  return {
    app,
    token,
    tokenFile: file,
    feed,
    alerts,
    metrics,
    watch: { ports: portWatch, dhcp: dhcpWatch },
    probes,
    close,
  };
}

/** Probe mode's server (PROBE_HUB_URL + PROBE_TOKEN): see createProbeServer. */
export interface ProbeServer {
  readonly app: App;
  readonly token: string;
  readonly tokenFile: string | undefined;
  readonly probe: Probe;
  close(): Promise<void>;
}

/**
 * The composition root of probe mode (docs/probes.md): no database and no inventory; the tool
 * runner for discovery, the name resolver, the probe (scan loop, spool, uploader), and an app that
 * serves /health and GET /nettools/scan behind the usual token. Nothing else, not even the OpenAPI
 * document, /docs or the console's sign-in (a minimal surface): a probe's devices are the hub's,
 * and what a probe does not serve cannot be attacked.
 */
export async function createProbeServer(
  config: Config,
  logger: Logger,
  options: Pick<ServerOptions, 'testOnlyNamePorts'> = {},
): Promise<ProbeServer> {
  const { token, file } = resolveToken(config.API_TOKEN, config.tokenFromFile, config.DATA_DIR);
  const app = await buildApp({
    token,
    bodyLimit: config.BODY_LIMIT,
    requestTimeoutMs: config.REQUEST_TIMEOUT_MS,
    maxConnections: config.MAX_CONNECTIONS,
    logger,
    corsOrigins: config.CORS_ORIGINS,
    trustProxy: config.TRUST_PROXY,
    surface: 'minimal',
  });
  const runner = startToolRunner(config, logger);
  const runTool: RunTool = (tool, args, { timeoutMs, signal }) =>
    runner.run({ tool, args, timeoutMs, signal, allowNonZeroExit: true, outputLimit: discoveryOutputLimit });
  const probe = new Probe({
    config,
    logger: logger.child({ component: 'probe' }),
    runTool,
    arpScanInstalled: runner.isInstalled('arp-scan'),
    checkInterface: (iface) => interfaceProblem(iface),
    resolver: new NameResolver({ config, testOnlyPorts: options.testOnlyNamePorts }),
  });
  await app.register(probeStatusRoutes, { probe });
  logger.info(
    { event: 'probe-mode', hub: new URL(config.PROBE_HUB_URL).origin, subnets: config.SCAN_SUBNETS },
    'probe mode: scanning and uploading to the hub; no inventory here',
  );
  probe.start();

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      await probe.stop();
      await app.close();
      await runner.killAll();
    })();
    return closing;
  };
  return { app, token, tokenFile: file, probe, close };
}

/**
 * The composition root of probe mode (PROBE_HUB_URL + PROBE_TOKEN): no database and no inventory;
 * the tool runner for discovery, the name resolver, the probe (scan loop, spool, uploader), and an
 * HTTP app that serves /health and GET /nettools/scan (the scanner's status with the uploader's
 * beside it) behind the usual token. Nothing else: a probe's devices are the hub's.
 */
import { Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { buildApp, type App } from '../http/app.js';
import { resolveToken } from '../http/auth.js';
import { ErrorRef } from '../http/schemas.js';
import { NameResolver, type ResolverOptions } from '../names/resolver.js';
import { cleanupOrphans } from '../nettools/orphans.js';
import { ToolRunner } from '../nettools/runner.js';
import type { RunTool } from '../scanner/discovery.js';
import { interfaceProblem } from '../scanner/link.js';
import { ScanStatusSchema } from '../scanner/routes.js';
import { CycleSummarySchema } from '../scanner/summary.js';
import { Probe } from './probe.js';

export interface ProbeServer {
  readonly app: App;
  readonly token: string;
  readonly tokenFile: string | undefined;
  readonly probe: Probe;
  close(): Promise<void>;
}

export interface ProbeServerOptions {
  readonly testOnlyNamePorts?: ResolverOptions['testOnlyPorts'];
}

/** arp-scan prints ~50 bytes per host: a /16 needs ~3 MB, more than TOOL_OUTPUT_LIMIT's default. */
const discoveryOutputLimit = 16 * 1024 * 1024;

const ProbeStatusSchema = Type.Object(
  {
    ...ScanStatusSchema.properties,
    probe: Type.Object(
      {
        hub: Type.String({ description: 'The hub (PROBE_HUB_URL).' }),
        spooledCycles: Type.Integer({ description: 'Cycles on disk the hub has not taken yet.' }),
        droppedCycles: Type.Integer({
          description: 'Cycles dropped (PROBE_SPOOL_MAX) not yet reported to the hub.',
        }),
        lastUploadAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
        lastError: Type.Union([Type.String(), Type.Null()], {
          description: 'Why the last upload failed; null after a success.',
        }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export async function createProbeServer(
  config: Config,
  logger: Logger,
  options: ProbeServerOptions = {},
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
  });
  const leftovers = cleanupOrphans();
  if (leftovers.killed.length > 0 || leftovers.removed.length > 0)
    logger.warn(leftovers, 'removed what a previous server left behind');
  const runner = new ToolRunner({
    toolPath: config.TOOL_PATH,
    concurrency: config.TOOL_CONCURRENCY,
    queue: config.TOOL_QUEUE,
    outputLimit: config.TOOL_OUTPUT_LIMIT,
    logger: logger.child({ component: 'nettools' }),
  });
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
  app.addSchema(CycleSummarySchema);
  app.get(
    '/nettools/scan',
    {
      schema: {
        tags: ['scanning'],
        summary: "The probe's scanner (enabled, running, last cycle) and its uploads to the hub (spool).",
        response: { 200: ProbeStatusSchema, 403: ErrorRef },
      },
    },
    async () => ({ success: true as const, ...probe.status() }),
  );
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

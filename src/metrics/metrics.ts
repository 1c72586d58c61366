/**
 * Prometheus metrics, one registry per server instance (tests start several in one process).
 *
 * - HTTP: requests by method, route PATTERN (never the raw URL: a MAC in a path would make one
 *   series per device) and status, and a duration histogram by route (request-stats.ts);
 * - devices: `netkeep_devices{status}` (the devStatus rule of GET /devices) and NetAlertX's own
 *   names, so its Grafana dashboards work, read at scrape time;
 * - the scanner (from the change feed), tool runs (from the runner), notifications (from the
 *   alert delivery, through `recordNotification`);
 * - prom-client's default process_* and nodejs_* metrics.
 */
import type { DeviceReadouts, DeviceStatusRow } from '../store/readouts.js';
import client from 'prom-client';
import type { DeviceCounts } from '../store/devices.js';
import { deviceStatuses, type DeviceCounter } from '../devices/status.js';
import type { ChangeFeed } from '../events.js';
import { RequestStats } from './request-stats.js';

export interface MetricsOptions {
  /** The device counts the store keeps (the numbers of GET /devices/totals, never a scan). */
  readonly counts: () => Promise<DeviceCounts>;
  /** For the per-device series, which list every device anyway. */
  /** The per-device series' rows (the store's readouts). */
  readonly readouts: Pick<DeviceReadouts, 'statusRows'>;
  readonly feed: ChangeFeed;
}

/** Each NetAlertX total: its metric name, help text and the device counter it shows. */
const netalertxTotals = [
  ['netalertx_connected_devices', 'Devices not archived and present in the last scan.', 'connected'],
  ['netalertx_offline_devices', 'Devices not archived and absent from the last scan.', 'absent'],
  ['netalertx_down_devices', 'Devices not archived, devAlertDown set, absent from the last scan.', 'down'],
  ['netalertx_new_devices', 'Devices not archived and marked new.', 'new'],
  ['netalertx_archived_devices', 'Archived devices.', 'archived'],
  ['netalertx_favorite_devices', 'Devices not archived and marked favourite.', 'favorites'],
  ['netalertx_my_devices', 'Devices not archived.', 'my'],
] as const satisfies ReadonlyArray<readonly [string, string, DeviceCounter]>;

/**
 * Longest label value of netalertx_device_status, in characters. A device's name, vendor and type
 * may each hold 16 KB: labelled in full, 1,000 such devices made a 65 MB answer whose building
 * blocked the server for seconds and could exhaust its heap. A label is for display in a dashboard.
 */
export const maxLabelChars = 256;

/** A label value cut to maxLabelChars (an ellipsis marks the cut). */
function labelValue(text: string | null): string {
  if (text === null) return '';
  if (text.length <= maxLabelChars) return text;
  // Not between the two halves of a surrogate pair.
  return `${text.slice(0, maxLabelChars - 1).replace(/[\uD800-\uDBFF]$/, '')}\u2026`;
}

export class Metrics {
  readonly registry = new client.Registry();
  /** The per-request series (request-stats.ts), recorded by the hooks of routes.ts. */
  readonly requests = new RequestStats();
  private readonly devices: client.Gauge<'status'>;
  private readonly netalertx: ReadonlyArray<readonly [client.Gauge, DeviceCounter]>;
  private readonly deviceStatus: client.Gauge;
  private readonly scanDuration: client.Histogram;
  private readonly scanErrors: client.Counter;
  private readonly toolRuns: client.Counter<'tool' | 'outcome'>;
  private readonly notifications: client.Counter<'channel' | 'status'>;
  private readonly counts: () => Promise<DeviceCounts>;
  private readonly selectDevices: () => Promise<DeviceStatusRow[]>;
  private readonly unsubscribe: () => void;

  constructor(options: MetricsOptions) {
    const registers = [this.registry];
    client.collectDefaultMetrics({ register: this.registry });
    this.devices = new client.Gauge({
      name: 'netkeep_devices',
      help: 'Devices by devStatus (On-line, Off-line, Down), as GET /devices?status= counts them.',
      labelNames: ['status'],
      registers,
    });
    this.netalertx = netalertxTotals.map(
      ([name, help, column]) => [new client.Gauge({ name, help, registers }), column] as const,
    );
    this.deviceStatus = new client.Gauge({
      name: 'netalertx_device_status',
      help: 'One series per device, always 1, labelled as NetAlertX labels it (device_status: New, Online, Down, Archived or Offline).',
      labelNames: [
        'device',
        'mac',
        'ip',
        'vendor',
        'first_connection',
        'last_connection',
        'dev_type',
        'device_status',
      ],
      registers,
    });
    this.scanDuration = new client.Histogram({
      name: 'netkeep_scan_cycle_duration_seconds',
      help: 'Duration of presence scan cycles (failed ones included).',
      buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers,
    });
    this.scanErrors = new client.Counter({
      name: 'netkeep_scan_errors_total',
      help: 'Presence scan cycles that failed (and changed nothing).',
      registers,
    });
    this.toolRuns = new client.Counter({
      name: 'netkeep_tool_runs_total',
      help: 'Tool commands by tool and outcome (ok, exit-nonzero, timeout, output-too-large, aborted, shutdown, spawn-error, not-installed, saturated).',
      labelNames: ['tool', 'outcome'],
      registers,
    });
    this.notifications = new client.Counter({
      name: 'netkeep_notifications_total',
      help: 'Notification deliveries by channel (webhook, ntfy, apprise, mqtt) and resulting status.',
      labelNames: ['channel', 'status'],
      registers,
    });

    const { readouts, feed } = options;
    this.counts = options.counts;
    // NetAlertX's status order: New first, then On-line, Down, Archived, Off-line.
    this.selectDevices = () => readouts.statusRows(maxLabelChars);

    const stopScan = feed.subscribe('scan-finished', (summary) => {
      this.scanDuration.observe(summary.durationMs / 1000);
      if (summary.errors.length > 0) this.scanErrors.inc();
    });
    this.unsubscribe = stopScan;
  }

  /** One tool run's outcome (the runner's onOutcome). */
  recordToolRun(tool: string, outcome: string): void {
    this.toolRuns.inc({ tool, outcome });
  }

  /** One notification delivery attempt's result, e.g. ('webhook', 'sent'). For the alert delivery loop. */
  recordNotification(channel: string, status: string): void {
    this.notifications.inc({ channel, status });
  }

  /** The Prometheus text, with the device gauges read from the database now. */
  async scrape(): Promise<string> {
    const counts = await this.counts();
    for (const status of deviceStatuses) this.devices.set({ status }, counts[status]);
    for (const [gauge, counter] of this.netalertx) gauge.set(counts[counter]);
    this.deviceStatus.reset();
    for (const row of await this.selectDevices()) {
      this.deviceStatus.set(
        {
          device: labelValue(row.devName),
          mac: row.devMac,
          ip: labelValue(row.devLastIP),
          vendor: labelValue(row.devVendor),
          first_connection: labelValue(row.devFirstConnection),
          last_connection: labelValue(row.devLastConnection),
          dev_type: labelValue(row.devType),
          device_status: row.status,
        },
        1,
      );
    }
    return `${await this.registry.metrics()}\n${this.requests.text()}`;
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  close(): void {
    this.unsubscribe();
  }
}

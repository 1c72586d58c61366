/**
 * Device readouts for the features that show devices elsewhere: the live stream's device summaries,
 * the MQTT bridge's tracked devices, the metrics' per-device series. Each is one query however many
 * devices. SQLite: sqlite/readouts.ts.
 */
import type { DeviceStatus } from '../devices/status.js';

/** The device fields of a `device-event` (the webhook event's `device`). */
export interface DeviceSummary {
  readonly devName: string;
  readonly devOwner: string;
  readonly devType: string;
  readonly devVendor: string;
  readonly devLastIP: string;
  readonly devStatus: DeviceStatus;
}

/** What the MQTT bridge publishes of a device. */
export interface TrackedDevice {
  readonly devMac: string;
  readonly devName: string;
  readonly devVendor: string;
  readonly devLastIP: string;
  /** ISO 8601, or null when never seen. */
  readonly devLastConnection: string | null;
  readonly devPresentLastScan: number;
  readonly devAlertDown: number;
  readonly devIsArchived: number;
}

/**
 * A device as NetAlertX's Prometheus exporter labels it: text cut to `maxLabelChars + 1` characters
 * (the caller marks the cut), times as NetAlertX shows them (`YYYY-MM-DD HH:MM:SS`, as imported).
 */
export interface DeviceStatusRow {
  readonly devName: string | null;
  readonly devMac: string;
  readonly devLastIP: string | null;
  readonly devVendor: string | null;
  readonly devFirstConnection: string | null;
  readonly devLastConnection: string | null;
  readonly devType: string | null;
  /** New, Online, Down, Archived or Offline (NetAlertX's order). */
  readonly status: string;
}

export interface DeviceReadouts {
  /** The summaries of these devices (missing ones left out), in one read. */
  summaries(macs: readonly string[]): Promise<Map<string, DeviceSummary>>;
  /** Every device, in MAC order. */
  trackedDevices(): Promise<TrackedDevice[]>;
  trackedDevice(mac: string): Promise<TrackedDevice | undefined>;
  /** Every device as the metrics label it, in MAC order. */
  statusRows(maxLabelChars: number): Promise<DeviceStatusRow[]>;
}

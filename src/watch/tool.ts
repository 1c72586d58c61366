/**
 * How the security watch runs its commands: through the one tool runner (src/nettools/runner.ts),
 * injected so that the watch's logic is tested with captured output too. `background` runs are the
 * watch's scheduled scans: they never take the runner's last free slot and never fill its queue,
 * so API requests are never starved by them.
 */
import type { PlannedEvent } from '../devices/presence.js';
import type { NotifyRequest } from '../store/outbox.js';
import type { ChangeFeed } from '../events.js';
import type { ToolName } from '../nettools/runner.js';
import type { ToolResult } from '../scanner/discovery.js';

export type WatchRunTool = (
  tool: ToolName,
  args: readonly string[],
  options: { timeoutMs: number; signal?: AbortSignal; background?: boolean },
) => Promise<ToolResult>;

/** A stored time has whole seconds: events carry what will be read back. */
export function wholeSeconds(now: Date): Date {
  return new Date(Math.floor(now.getTime() / 1000) * 1000);
}

/** Where a periodic watch's events go besides the database: the alerts outbox and the change feed. */
export interface WatchSinks {
  readonly feed?: ChangeFeed;
  readonly notifications?: { request(events: readonly PlannedEvent[], now: Date): NotifyRequest | undefined };
}

/** After the commit: the events on the change feed (live stream, MQTT). */
export function publishWatchEvents(sinks: WatchSinks, events: readonly PlannedEvent[]): void {
  if (events.length === 0) return;
  sinks.feed?.publish('scan-applied', {
    events: events.map((e) => ({
      mac: e.mac,
      ip: e.ip,
      type: e.type,
      time: e.dateTime,
      additionalInfo: e.additionalInfo,
    })),
    presence: [],
  });
}

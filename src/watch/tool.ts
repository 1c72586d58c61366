/**
 * How the security watch runs its commands: through the one tool runner (src/nettools/runner.ts),
 * injected so that the watch's logic is tested with captured output too. `background` runs are the
 * watch's scheduled scans: they never take the runner's last free slot and never fill its queue,
 * so API requests are never starved by them.
 */
import type { ToolResult } from '../scanner/discovery.js';
import type { ToolName } from '../nettools/runner.js';

export type WatchRunTool = (
  tool: ToolName,
  args: readonly string[],
  options: { timeoutMs: number; signal?: AbortSignal; background?: boolean },
) => Promise<ToolResult>;

/** A stored time has whole seconds: events carry what will be read back. */
export function wholeSeconds(now: Date): Date {
  return new Date(Math.floor(now.getTime() / 1000) * 1000);
}

/**
 * The runner's "tool run" log lines of a TestServer. The server writes the line before it answers,
 * but the test reads the server's stdout asynchronously, so a test waits for the line it expects.
 */
import { eventually } from './processes.js';
import type { TestServer } from './server.js';

export function toolRuns(server: TestServer): Record<string, unknown>[] {
  return server.logs
    .filter((line) => line.includes('"msg":"tool run"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** How many runs the server has logged so far, once every line written before now has arrived. */
export async function toolRunCount(server: TestServer): Promise<number> {
  await server.logsCaughtUp();
  return toolRuns(server).length;
}

/** The run logged after the first `seen` ones (waits for it, bounded); `seen` from `toolRunCount`. */
export async function nextToolRun(server: TestServer, seen: number): Promise<Record<string, unknown>> {
  await eventually(() => toolRuns(server).length > seen);
  const line = toolRuns(server)[seen];
  if (line === undefined) throw new Error(`no tool run logged after ${seen}`);
  return line;
}

/**
 * MCP: `tools/call` of `search_devices` on the real server (child process, loopback), 32 concurrent
 * clients, each request a stateless Streamable HTTP POST to /mcp (as an SDK client sends it after
 * `initialize`), over a home network's inventory (250 devices) and the devices bench's (10,000).
 * Beside each, the same search as the REST call it makes (`POST /devices/search`), so the table
 * shows what the MCP layer adds to the search itself. Target: p99 under 20 ms.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { seedDatabase, startNetkeep } from './devices.js';
import { benchToken, printHeader, printRow, runLoad } from './lib.js';

const sizes = [250, 10_000];

export async function run(): Promise<void> {
  printHeader();
  for (const devices of sizes) await runSize(devices);
}

async function runSize(devices: number): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-mcp-'));
  seedDatabase(dataDir, { devices, events: 0, sessions: 0 });
  const server = await startNetkeep(dataDir);
  try {
    const headers = {
      authorization: `Bearer ${benchToken}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    // Each request searches another device by a part of its name (device-12 also matches
    // device-120 to device-129 and so on: up to 111 matches, 50 returned).
    let n = 0;
    const query = (): string => `device-${(n++ * 7919) % devices}`;
    const call = (id: number, q: string): string =>
      JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'search_devices', arguments: { query: q } },
      });

    // One call checked before the load: the right device, no error.
    const probe = await fetch(`${server.url}/mcp`, { method: 'POST', headers, body: call(0, 'device-42') });
    const answer = (await probe.json()) as { result?: { isError?: boolean; content?: { text?: string }[] } };
    const text = answer.result?.content?.[0]?.text ?? '';
    if (probe.status !== 200 || answer.result?.isError !== false || !text.includes('"devName":"device-42"'))
      throw new Error(
        `search_devices over MCP did not answer the device: ${probe.status} ${text.slice(0, 200)}`,
      );

    // 1 client: the cost of one call, no queue; 32 clients: the target's load.
    for (const clients of devices === sizes[0] ? [1, 32] : [32]) {
      const load = { url: server.url, connections: clients, duration: 5, method: 'POST', headers };
      printRow(
        `MCP tools/call search_devices, ${devices} devices, ${clients} client${clients > 1 ? 's' : ''}`,
        await runLoad({ ...load, next: () => ({ path: '/mcp', body: call(n, query()) }) }),
      );
      printRow(
        `REST POST /devices/search (the same search), ${devices} devices, ${clients} client${clients > 1 ? 's' : ''}`,
        await runLoad({
          ...load,
          next: () => ({ path: '/devices/search', body: JSON.stringify({ query: query() }) }),
        }),
      );
    }
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

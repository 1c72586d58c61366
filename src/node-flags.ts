/**
 * The V8 flags the server process runs with: `npm start` and `npm run bench` put them on the
 * command line of `node dist/src/main.js` (they must be set before the heap exists, so the server
 * cannot set them on itself).
 *
 * Why: without them V8 sizes the heap for the machine (a 4 GiB limit on 24 GiB of RAM) and lets
 * garbage pile up in the old generation under load: 250 MiB RSS at peak for ~30 MiB of live data.
 * With a smaller young generation and an explicit old-generation limit it collects earlier: about
 * 145 MiB at peak in the same benchmark, for 10-25 % fewer cached GETs per second
 * (docs/benchmarks.md). The 1 GiB limit is far above anything netkeep keeps alive (the GET cache,
 * a scan cycle's plan, tool output capped by TOOL_OUTPUT_LIMIT), so it never ends the process.
 */
export const serverNodeFlags: readonly string[] = ['--max-semi-space-size=4', '--max-old-space-size=1024'];

/**
 * The flags to add for a process whose NODE_OPTIONS is `nodeOptions`: an operator's own setting of
 * a flag wins (command-line flags would override NODE_OPTIONS).
 */
export function serverNodeFlagsFor(nodeOptions: string): string[] {
  const given = nodeOptions.replaceAll('_', '-');
  return serverNodeFlags.filter((flag) => !given.includes(flag.split('=')[0] ?? flag));
}

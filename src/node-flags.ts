/**
 * The V8 flags the server process runs with: `npm start` and `npm run bench` put them on the
 * command line of `node dist/src/main.js` (they must be set before the heap exists, so the server
 * cannot set them on itself).
 *
 * Why: left to itself, V8 sizes the heap for the machine (a 4 GiB limit on a 24 GiB one) and lets
 * dead request objects fill the old generation under load, so RSS grew far beyond the live data. A
 * bounded young generation and an explicit old-generation limit make it collect earlier. Figures and
 * the measured cost in requests/s: docs/benchmarks-history.md, "Memory: the first study of the V8
 * flags".
 *
 * The young generation is 8 MiB per semi-space, not 2: every request in flight is alive at each
 * scavenge, so with 32 concurrent requests a 2 MiB semi-space made a scavenge every ~130 requests,
 * each copying the same in-flight objects. At 8 MiB the server spent 9-29 % less CPU per request
 * (cached GET, a kept page of the list, update-column) for ~15-20 MiB more peak RSS.
 *
 * The old-generation limit is 512 MiB, or V8's own default where that is lower (about a quarter of the
 * RAM): never above what V8 would choose. netkeep's live data is far smaller: ~30 MiB under the
 * device benchmark, the GET cache bounded in size, tool output bounded by the runner's caps.
 */
const youngGenerationMiB = 8;
const oldGenerationMiB = 512;

/**
 * The flags for a machine with `totalMemoryBytes` of RAM whose NODE_OPTIONS is `nodeOptions`. A flag
 * the operator gives in NODE_OPTIONS wins (it is left out here: command-line flags would override
 * NODE_OPTIONS). Matching is by name prefix, `_` and `-` alike, as V8 treats them.
 */
export function serverNodeFlagsFor(nodeOptions: string, totalMemoryBytes: number): string[] {
  const quarterOfRamMiB = Math.floor(totalMemoryBytes / 4 / 1024 / 1024);
  const flags = [
    `--max-semi-space-size=${youngGenerationMiB}`,
    `--max-old-space-size=${Math.min(oldGenerationMiB, quarterOfRamMiB)}`,
  ];
  const given = nodeOptions.replaceAll('_', '-');
  return flags.filter((flag) => !given.includes(flag.split('=')[0] ?? flag));
}

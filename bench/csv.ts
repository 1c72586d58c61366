/**
 * The README's round trip of 10,000 devices between two real servers (child processes, loopback):
 * `GET /devices/export` from a seeded server, then `POST /devices/import` of that CSV into a fresh
 * one, in each form the import takes (multipart `file`, JSON `{content: base64}`). Target: under
 * 5 s and under 300 MB RSS. Each round starts a fresh target, so that its peak RSS (VmHWM) is the
 * import's; the figures are median (min-max) over the rounds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { seedDatabase, startNetkeep } from './devices.js';
import { benchToken, median, memoryOf } from './lib.js';

const devices = 10_000;
const rounds = 5;
const auth = { authorization: `Bearer ${benchToken}` };
const boundary = '----netkeep-bench';

const forms = {
  multipart: (csv: Buffer) => ({
    type: `multipart/form-data; boundary=${boundary}`,
    body: Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="devices.csv"\r\n\r\n`,
      ),
      csv,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]),
  }),
  json: (csv: Buffer) => ({
    type: 'application/json',
    body: Buffer.from(`{"content":"${csv.toString('base64')}"}`),
  }),
};

const spread = (values: number[], digits = 0): string =>
  `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)})`;

export async function run(): Promise<void> {
  const sourceDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-csv-'));
  seedDatabase(sourceDir, { devices, events: 0, sessions: 0 });
  const source = await startNetkeep(sourceDir);
  try {
    console.log(
      `| round trip of ${devices} devices (${rounds} rounds) | export ms | import ms | total ms | body MiB | target peak RSS MiB |`,
    );
    console.log('|---|---|---|---|---|---|');
    for (const [name, form] of Object.entries(forms)) {
      const exportMs: number[] = [];
      const importMs: number[] = [];
      const totalMs: number[] = [];
      const peaks: number[] = [];
      let bodyMiB = 0;
      for (let round = 0; round < rounds; round++) {
        const targetDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-csv-'));
        const target = await startNetkeep(targetDir);
        try {
          const started = performance.now();
          const exported = await fetch(`${source.url}/devices/export`, { headers: auth });
          const csv = Buffer.from(await exported.arrayBuffer());
          const exportedAt = performance.now();
          const { type, body } = form(csv);
          const res = await fetch(`${target.url}/devices/import`, {
            method: 'POST',
            headers: { ...auth, 'content-type': type },
            body,
          });
          const answer = (await res.json()) as { inserted?: number };
          const done = performance.now();
          if (res.status !== 200 || answer.inserted !== devices)
            throw new Error(
              `import (${name}) answered ${res.status} ${JSON.stringify(answer).slice(0, 300)}`,
            );
          exportMs.push(exportedAt - started);
          importMs.push(done - exportedAt);
          totalMs.push(done - started);
          peaks.push(memoryOf(target.process.pid ?? 0).peakMiB);
          bodyMiB = body.length / 1024 / 1024;
        } finally {
          await target.stop();
          rmSync(targetDir, { recursive: true, force: true });
        }
      }
      console.log(
        `| ${name} | ${spread(exportMs)} | ${spread(importMs)} | ${spread(totalMs)} | ${bodyMiB.toFixed(1)} | ${spread(peaks)} |`,
      );
    }
    console.log(`source server peak RSS: ${memoryOf(source.process.pid ?? 0).peakMiB.toFixed(0)} MiB`);
  } finally {
    await source.stop();
    rmSync(sourceDir, { recursive: true, force: true });
  }
}

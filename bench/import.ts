/**
 * Benchmark of `npm run import`: a NetAlertX app.db (the shipped schema, filled) with 10,000
 * devices, 1,000,000 events and 200,000 sessions, in local time (Europe/Berlin), imported into an
 * empty netkeep database by the real CLI in a child process. Targets: under 30 s, peak RSS under
 * 300 MB. Rounds run one after another on fresh targets; the figures are median (min-max). Then a
 * second import into the filled database (idempotent: it adds nothing) is timed once.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

const devices = 10_000;
const events = 1_000_000;
const sessions = 200_000;
const rounds = 3;

const fixture = fileURLToPath(new URL('../../test/fixtures/import/netalertx-app.db', import.meta.url));
const cli = fileURLToPath(new URL('../src/import/cli.js', import.meta.url));

/** The source: MACs in NetAlertX's upper-case form, times spread over two years of local time. */
function buildSource(dir: string): string {
  const path = join(dir, 'app.db');
  copyFileSync(fixture, path);
  chmodSync(path, 0o644);
  const db = new Database(path);
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  db.exec('DROP TRIGGER IF EXISTS trg_insert_devices');
  db.prepare("INSERT INTO Settings (setKey, setValue) VALUES ('TIMEZONE', 'Europe/Berlin')").run();
  const mac = `printf('02:00:%02X:%02X:%02X:%02X', (i >> 24) & 255, (i >> 16) & 255, (i >> 8) & 255, i & 255)`;
  const time = (spreadSeconds: string) =>
    `datetime('2024-01-01 00:00:00', '+' || (${spreadSeconds}) || ' seconds')`;
  db.transaction(() => {
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1)
       INSERT INTO Devices (devMac, devName, devOwner, devType, devVendor, devFirstConnection, devLastConnection,
         devLastIP, devGUID)
       SELECT ${mac}, 'device ' || i, 'owner', 'Phone', 'Vendor', ${time('i * 60')}, ${time('i * 60 + 3600')},
         '10.0.' || ((i >> 8) & 255) || '.' || (i & 255), lower(hex(randomblob(16)))
       FROM n`,
    ).run(devices);
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1)
       INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType, eve_AdditionalInfo, eve_PendingAlertEmail)
       SELECT printf('02:00:%02X:%02X:%02X:%02X', 0, 0, ((i % ${devices}) >> 8) & 255, (i % ${devices}) & 255),
         '10.0.0.1', ${time('i * 63')}, CASE i % 4 WHEN 0 THEN 'Connected' WHEN 1 THEN 'Disconnected'
         WHEN 2 THEN 'Device Down' ELSE 'IP Changed' END, '', 0
       FROM n`,
    ).run(events);
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1)
       INSERT INTO Sessions (ses_MAC, ses_IP, ses_EventTypeConnection, ses_DateTimeConnection,
         ses_EventTypeDisconnection, ses_DateTimeDisconnection, ses_StillConnected, ses_AdditionalInfo)
       SELECT printf('02:00:%02X:%02X:%02X:%02X', 0, 0, ((i % ${devices}) >> 8) & 255, (i % ${devices}) & 255),
         '10.0.0.1', 'Connected', ${time('i * 313')}, 'Disconnected', ${time('i * 313 + 1800')}, 0, ''
       FROM n`,
    ).run(sessions);
  })();
  db.close();
  return path;
}

interface Measured {
  readonly seconds: number;
  readonly peakMiB: number;
  /** User + system CPU seconds of the import process: what the wall time would be on an idle machine, less I/O waits. */
  readonly cpuSeconds: number;
  readonly summary: string;
}

/** Runs the CLI in a child node that reports its own peak RSS (getrusage) as it exits. */
function runImport(source: string, dataDir: string): Measured {
  const script = `process.on('exit', () => { const u = process.resourceUsage(); process.stderr.write('maxrss ' + u.maxRSS + ' cpu ' + (u.userCPUTime + u.systemCPUTime) + '\\n'); });
    process.argv.splice(1, 0, 'import');
    await import(${JSON.stringify(cli)});`;
  const started = performance.now();
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script, source], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', DATA_DIR: dataDir, HISTORY_DAYS: '36500' },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const seconds = (performance.now() - started) / 1000;
  if (child.status !== 0) throw new Error(`import failed (${child.status}): ${child.stderr.slice(-2000)}`);
  const usage = /maxrss (\d+) cpu (\d+)/.exec(child.stderr);
  const kib = Number(usage?.[1] ?? Number.NaN);
  const cpuSeconds = Number(usage?.[2] ?? Number.NaN) / 1e6;
  const summary = child.stdout
    .split('\n')
    .filter((line) => /^\s+(devices|events|sessions)\s/.test(line))
    .map((line) => line.trim())
    .join('\n  ');
  return { seconds, peakMiB: kib / 1024, cpuSeconds, summary };
}

function spread(values: number[], digits: number): string {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
  return `${median.toFixed(digits)} (${(sorted[0] ?? 0).toFixed(digits)}-${(sorted.at(-1) ?? 0).toFixed(digits)})`;
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-bench-import-'));
  try {
    const built = performance.now();
    const source = buildSource(dir);
    console.log(
      `source: ${devices} devices, ${events} events, ${sessions} sessions (built in ${((performance.now() - built) / 1000).toFixed(1)} s)`,
    );
    const results: Measured[] = [];
    let lastTarget = '';
    for (let round = 0; round < rounds; round++) {
      const target = mkdtempSync(join(dir, 'target-'));
      const result = runImport(source, target);
      results.push(result);
      console.log(
        `round ${round + 1}: ${result.seconds.toFixed(1)} s, peak RSS ${result.peakMiB.toFixed(0)} MiB`,
      );
      if (round === 0) console.log(`  ${result.summary}`);
      if (lastTarget !== '') rmSync(lastTarget, { recursive: true, force: true });
      lastTarget = target;
    }
    console.log(
      `import (target < 30 s, < 300 MB): ${spread(
        results.map((r) => r.seconds),
        1,
      )} s, peak RSS ${spread(
        results.map((r) => r.peakMiB),
        0,
      )} MiB, CPU ${spread(
        results.map((r) => r.cpuSeconds),
        1,
      )} s, median (min-max) of ${rounds}`,
    );
    const again = runImport(source, lastTarget);
    console.log(
      `second import into the filled database: ${again.seconds.toFixed(1)} s, peak RSS ${again.peakMiB.toFixed(0)} MiB`,
    );
    console.log(`  ${again.summary}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  await Promise.resolve();
}

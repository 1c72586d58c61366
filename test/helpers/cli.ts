/**
 * A netkeep command-line tool run as a person runs it: `node <script> <args>` in `cwd`, with only
 * PATH and DATA_DIR=`cwd` in its environment (no .env, none of the test's variables), its output
 * collected.
 */
import { spawn } from 'node:child_process';

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function runCli(script: string, cwd: string, args: readonly string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', DATA_DIR: cwd },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      resolve({ code, stdout, stderr });
    });
  });
}

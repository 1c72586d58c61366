/**
 * Temporary directories of a test file, removed when its process exits. Why: a server a test stops
 * with `kill()` keeps its data directory (for a restart on it), and a directory handed to a server
 * is the test's to remove; without this, every run of the suite left about two dozen directories of
 * databases behind in the system's temporary directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made = new Set<string>();

process.on('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A new directory `<prefix>XXXXXX` in the system's temporary directory, removed at exit. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}

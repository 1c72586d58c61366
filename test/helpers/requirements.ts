/**
 * What a test needs (root, an OS tool) and cannot have. Outside CI a test that cannot run is
 * skipped with its reason printed. Under CI (`CI=true`) nothing is skipped for a missing
 * requirement: the test runs and fails, naming what is missing, so a CI run never reports as passed
 * what did not run.
 */
import { existsSync } from 'node:fs';

export const underCi = process.env.CI === 'true' || process.env.CI === '1';

/** The `skip` option for node:test: the reason outside CI, undefined (run, and fail) under CI. */
export function skipUnlessCi(missing: string | undefined, what: string): string | undefined {
  if (missing === undefined) return undefined;
  if (underCi) {
    console.log(`# CI=true: ${what} will run and fail: ${missing}`);
    return undefined;
  }
  console.log(`# ${what} skipped: ${missing}`);
  return missing;
}

/** Why the tests cannot run as root, or undefined when they do. */
export function rootMissing(): string | undefined {
  return process.getuid?.() === 0 ? undefined : 'needs root (run the tests as root)';
}

/** Why an absolute command path is not there, naming the Debian package; undefined when it is. */
export function commandMissing(path: string, debianPackage: string): string | undefined {
  return existsSync(path) ? undefined : `needs ${path} (apt-get install ${debianPackage})`;
}

/** Throws naming what is missing: for a `before` hook, so that every test of the suite fails. */
export function requireAll(...missing: (string | undefined)[]): void {
  const reasons = missing.filter((m): m is string => m !== undefined);
  if (reasons.length > 0) throw new Error(`cannot run: ${reasons.join('; ')}`);
}

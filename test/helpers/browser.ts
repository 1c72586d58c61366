/**
 * Headless Chromium for the console's browser tests, benchmark and screenshots: Debian's
 * `chromium` package driven by playwright-core (no browser download). `chromiumSkipReason()` says
 * why it cannot run; under CI (`CI=true`) a missing browser is an error naming the package instead,
 * so a test can never pass by not running.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const chromiumPath = '/usr/bin/chromium';

export const chromiumFlags = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Why the browser tests cannot run here, or undefined. Throws under CI instead of skipping. */
export function chromiumSkipReason(): string | undefined {
  if (existsSync(chromiumPath)) return undefined;
  const reason = `${chromiumPath} is missing: install the Debian package 'chromium'`;
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(reason);
  return reason;
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath, args: chromiumFlags, headless: true });
}

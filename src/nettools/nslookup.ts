/**
 * nslookup of an IP address (reverse) or a hostname (forward), against DNS_SERVER when set.
 * nslookup writes its errors to stdout and exits 1 both for "no such name" (a result) and for an
 * unreachable resolver (a failure), so the outcome is decided from the output, not the exit code.
 */
import { DomainError } from '../errors.js';
import { ipVersion, isHostname, mappedIpv4Hint, type IpPort } from '../validation.js';
import type { ToolRunner } from './runner.js';
import { tail } from './runner.js';

/** A resolver: DNS_SERVER as parsed at start. */
export type DnsServer = IpPort;

export interface NslookupOptions {
  /** DNS_SERVER; undefined for the system resolver. */
  readonly server: DnsServer | undefined;
  readonly timeoutMs: number;
}

/** Validates the name (`invalid`, naming the field) and builds the argument array. */
export function nslookupArgs(name: string, options: NslookupOptions): string[] {
  if (name.startsWith('-') || (ipVersion(name) === null && !isHostname(name))) {
    throw new DomainError(
      'invalid',
      `Invalid field 'devLastIP': expected an IP address or a hostname (RFC 1123 labels, at most 253 characters).${mappedIpv4Hint(name)}`,
      { code: 'INVALID_NAME' },
    );
  }
  const server = options.server;
  // nslookup tries a query 3 times; a per-try timeout of a quarter of the limit lets it finish
  // (and report "no servers could be reached") before the runner's limit stops it.
  const perTry = Math.max(1, Math.floor(options.timeoutMs / 4000));
  return [
    `-timeout=${perTry}`,
    ...(server?.port !== undefined ? [`-port=${server.port}`] : []),
    name,
    ...(server ? [server.host] : []),
  ];
}

/**
 * Lines that show the resolver answered, even without a record: "** server can't find x: NXDOMAIN"
 * and "*** Can't find x: No answer". With one of them, a non-zero exit is a result, not a failure.
 */
const answeredWithoutRecord = /server can't find|can't find .*: no answer/i;

export async function nslookup(
  runner: ToolRunner,
  name: string,
  options: NslookupOptions,
  signal?: AbortSignal,
): Promise<{ success: true; output: string[] }> {
  const args = nslookupArgs(name, options);
  const result = await runner.run({
    tool: 'nslookup',
    args,
    timeoutMs: options.timeoutMs,
    signal,
    allowNonZeroExit: true,
  });
  const output = result.stdout.split('\n').filter((line) => line.trim() !== '');
  const reached = !/no servers could be reached/i.test(result.stdout);
  if (!reached || (result.exitCode !== 0 && !answeredWithoutRecord.test(result.stdout))) {
    throw new DomainError(
      'command-failed',
      `nslookup could not get an answer from the resolver (exit code ${result.exitCode}).`,
      {
        code: 'DNS_NO_ANSWER',
        reason: 'Command failed',
        details: tail([result.stderr, result.stdout].filter((text) => text.trim() !== '').join('\n')),
      },
    );
  }
  return { success: true, output };
}

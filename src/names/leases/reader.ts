/**
 * The DHCP lease source: reads the lease files of DHCP_LEASES (read only), again whenever a file's
 * modification time or size changes, and answers a MAC's lease. A file that is missing, unreadable,
 * too large or not understood is a problem reported to the cycle summary, never a failure; its last
 * good reading is kept meanwhile (a server rewriting its file must not make every name vanish).
 */
import { readFile, stat } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import type { NameSourceError } from '../types.js';
import { parseAdguardLeases } from './adguard.js';
import { parseDnsmasqLeases } from './dnsmasq.js';
import { parseIscLeases } from './isc.js';
import { parseKeaLeases } from './kea.js';
import { leaseFormats, type Lease, type LeaseFormat, type ParsedLeases } from './lease.js';

export type { Lease, LeaseFormat } from './lease.js';

export interface LeaseFileSpec {
  readonly format: LeaseFormat;
  /** Absolute path. */
  readonly path: string;
}

/** Largest lease file read (a home network's is a few KiB; a big office's Kea file a few MiB). */
const maxLeaseFileBytes = 32 * 1024 * 1024;

const parsers: Record<LeaseFormat, (text: string) => ParsedLeases> = {
  dnsmasq: parseDnsmasqLeases,
  isc: parseIscLeases,
  kea: parseKeaLeases,
  adguard: parseAdguardLeases,
};

/** Parses a lease file's content in the given format (throws when the whole file is not understood). */
export function parseLeases(format: LeaseFormat, text: string): ParsedLeases {
  return parsers[format](text);
}

/**
 * DHCP_LEASES: a comma list of `format:path`, e.g. `dnsmasq:/leases/dhcp.leases,isc:/var/lib/dhcp/dhcpd.leases`.
 * Returns the specs, or a message saying what is wrong with which entry.
 */
export function parseLeaseSpecs(raw: string): LeaseFileSpec[] | string {
  const specs: LeaseFileSpec[] = [];
  for (const entry of raw.split(',').map((e) => e.trim())) {
    if (entry === '') continue;
    const colon = entry.indexOf(':');
    const format = colon === -1 ? '' : entry.slice(0, colon);
    const path = colon === -1 ? '' : entry.slice(colon + 1);
    if (!(leaseFormats as readonly string[]).includes(format))
      return `'${entry}' must be format:path with format one of ${leaseFormats.join(', ')}`;
    if (!isAbsolute(path)) return `'${entry}': the path must be absolute`;
    specs.push({ format: format as LeaseFormat, path });
  }
  return specs;
}

interface FileState {
  readonly spec: LeaseFileSpec;
  version: string;
  leases: readonly Lease[];
}

export interface LeaseSnapshot {
  /** The lease of each MAC across all files (one with a host name preferred, then the latest). */
  readonly byMac: ReadonlyMap<string, Lease>;
  readonly errors: readonly NameSourceError[];
}

export class LeaseFiles {
  private readonly files: FileState[];

  constructor(specs: readonly LeaseFileSpec[]) {
    this.files = specs.map((spec) => ({ spec, version: '', leases: [] }));
  }

  get configured(): boolean {
    return this.files.length > 0;
  }

  /** Reads the files that changed since the last call and answers every MAC's lease. */
  async read(): Promise<LeaseSnapshot> {
    const errors: NameSourceError[] = [];
    for (const file of this.files) {
      const problem = await this.refresh(file);
      if (problem !== undefined)
        errors.push({ source: 'dhcp', message: `${file.spec.format}:${file.spec.path}: ${problem}` });
    }
    const byMac = new Map<string, Lease>();
    for (const file of this.files)
      for (const lease of file.leases) {
        const held = byMac.get(lease.mac);
        if (held === undefined || better(lease, held)) byMac.set(lease.mac, lease);
      }
    return { byMac, errors };
  }

  private async refresh(file: FileState): Promise<string | undefined> {
    try {
      const info = await stat(file.spec.path);
      if (!info.isFile()) return 'not a regular file';
      if (info.size > maxLeaseFileBytes) return `larger than ${maxLeaseFileBytes} bytes; not read`;
      const version = `${info.mtimeMs}/${info.size}`;
      if (version === file.version) return undefined;
      const text = await readFile(file.spec.path, 'utf8');
      // Binary content read as UTF-8 is full of U+FFFD and NULs: not a lease file at all.
      if (text.includes('\u0000')) return 'binary content; not a lease file (last good reading kept)';
      const parsed = parseLeases(file.spec.format, text);
      file.version = version;
      file.leases = parsed.leases;
      if (parsed.rejected > 0)
        return `${parsed.rejected} ${parsed.rejected === 1 ? 'entry' : 'entries'} not understood (skipped)`;
      return undefined;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return 'missing (last good reading kept)';
      if (code === 'EACCES') return 'not readable (permission denied)';
      return `${err instanceof Error ? err.message : String(err)} (last good reading kept)`;
    }
  }
}

/** Whether lease `a` should name its MAC rather than `b`: a host name first, then the later end. */
function better(a: Lease, b: Lease): boolean {
  if ((a.hostname !== '') !== (b.hostname !== '')) return a.hostname !== '';
  const end = (l: Lease): number => (l.expires === null ? Infinity : l.expires.getTime());
  return end(a) > end(b);
}

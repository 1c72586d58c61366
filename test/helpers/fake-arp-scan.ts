/**
 * A stand-in `arp-scan` for scan cycles of a chosen size without a LAN: a shell script (put its
 * directory in TOOL_PATH, with SCAN_TOOL=arp-scan and SCAN_SUBNETS=127.0.0.0/16@lo) that prints
 * `count` hosts in arp-scan's --plain format, alternating between two disjoint sets of hosts on
 * each run. After the first cycle (count New Device events), every cycle writes 2 x count events:
 * one set connects (or is new), the other disconnects. It sends nothing anywhere.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The SCAN_SUBNETS value the fake answers for (on loopback: nothing real can be scanned). */
export const fakeArpScanSubnet = '127.0.0.0/16@lo';

/** The configuration that scans with the fake written into `dir` (no automatic cycle after the first). */
export function fakeArpScanEnv(dir: string): Record<string, string> {
  return { TOOL_PATH: dir, SCAN_TOOL: 'arp-scan', SCAN_SUBNETS: fakeArpScanSubnet, SCAN_INTERVAL: '86400' };
}

/** Writes `arp-scan` into `dir`; `setFakeArpScanCount` changes the count later. */
export function writeFakeArpScan(dir: string, count: number): void {
  setFakeArpScanCount(dir, count);
  const script = `#!/bin/sh
state="${dir}/arp-scan-state"
n=$(/bin/cat "${dir}/arp-scan-count")
if [ -f "$state" ]; then /bin/rm "$state"; off=1; else /usr/bin/touch "$state"; off=0; fi
exec /usr/bin/awk -v n="$n" -v off="$off" 'BEGIN { for (i = 0; i < n; i++) { k = i + off * n; printf "127.0.%d.%d\\t02:00:00:00:%02x:%02x\\tFake Vendor\\n", int(k / 250), k % 250 + 1, int(k / 256), k % 256 } }'
`;
  writeFileSync(join(dir, 'arp-scan'), script);
  chmodSync(join(dir, 'arp-scan'), 0o755);
}

export function setFakeArpScanCount(dir: string, count: number): void {
  writeFileSync(join(dir, 'arp-scan-count'), String(count));
}

/** The MAC of host k of the fake (k from 0 to 2 x count - 1). */
export function fakeArpScanMac(k: number): string {
  const hex = (n: number): string => n.toString(16).padStart(2, '0');
  return `02:00:00:00:${hex(Math.floor(k / 256))}:${hex(k % 256)}`;
}

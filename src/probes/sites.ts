/**
 * Sites in a scan cycle, pure: which known devices a cycle may judge, and the
 * devSite/devSyncHubNode marks of the devices it saw. Shared by the hub's own cycles (site
 * SITE_NAME) and the probes' cycles applied at the hub.
 */
import type { KnownDevice, SiteMark } from '../devices/presence.js';

/**
 * The known devices a cycle of `site` may judge: those it saw, wherever they were last, and those
 * last seen at its own site. A device last seen at another site (behind another probe, or one
 * that moved there: a laptop) is not looked at by this cycle and keeps its state, even when its
 * address lies in this cycle's subnets (two sites may well both use 192.168.1.0/24).
 * `ownSites`: the sites that count as this cycle's (the hub's own cycles also take '', the devices
 * from before sites existed).
 */
export function scopeToSite(
  known: ReadonlyMap<string, KnownDevice>,
  seen: ReadonlySet<string>,
  ownSites: ReadonlySet<string>,
): Map<string, KnownDevice> {
  const scoped = new Map<string, KnownDevice>();
  for (const [mac, device] of known)
    if (seen.has(mac) || ownSites.has(device.site ?? '')) scoped.set(mac, device);
  return scoped;
}

/** The marks of the devices a cycle saw (devScan = 0 devices are left alone, as by the state machine). */
export function siteMarks(
  seen: Iterable<string>,
  known: ReadonlyMap<string, KnownDevice>,
  site: string,
  node: string,
): SiteMark[] {
  const marks: SiteMark[] = [];
  for (const mac of seen) if (known.get(mac)?.scan !== false) marks.push({ mac, site, node });
  return marks;
}

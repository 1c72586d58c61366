/**
 * Naming inside the scan cycle and on request. `prepare` runs before the cycle's transaction (it
 * waits on the network) and looks up the seen devices that need it: not named by a person or an
 * import, and new or last looked up more than NAME_REFRESH_MINUTES ago. Its result's `apply` runs
 * inside the cycle's synchronous load-plan-apply step: it reads the stored names again and applies
 * the rules (rules.ts) then, so a name a person writes while the lookups run is never replaced. New
 * devices get their name in the plan itself, so the New Device event, its notification and its
 * /stream message carry it.
 *
 * When each device was last looked up is kept in memory: after a restart every device not named
 * by a person is looked up once more, which the first cycle after a restart can well afford (the
 * round is bounded by NAME_CONCURRENCY and NAME_TIMEOUT_MS) and which catches renames made while
 * netkeep was down.
 */
import type { DeviceStore } from '../store/devices.js';
import type { NameUpdate, PresenceChanges, StoredDeviceName } from '../devices/presence.js';
import { notFound } from '../devices/params.js';
import { decideName, isProtected } from './rules.js';
import type { NameResolver, NameTarget, LookupRound } from './resolver.js';
import type { NameCandidate, NameSourceError } from './types.js';

/** A device the scan sees (the scanner's Observation, reduced to what naming needs). */
export interface SeenDevice {
  readonly ips: readonly string[];
}

const unnamed: StoredDeviceName = { name: '(unknown)', source: '', fqdn: '', ip: '' };

/** One cycle's lookups, ready to go into its plan. */
export class PreparedNames {
  /** Devices named or renamed by the last `apply`. */
  named = 0;

  constructor(
    private readonly round: LookupRound,
    private readonly devices: Pick<DeviceStore, 'loadNames'>,
  ) {}

  get errors(): readonly NameSourceError[] {
    return this.round.errors;
  }

  /** The plan with the names found: new devices carry theirs, existing ones get name updates. */
  async apply<P extends PresenceChanges>(plan: P): Promise<P> {
    this.named = 0;
    if (this.round.results.size === 0) return plan;
    const fresh = await this.devices.loadNames();
    const newDevices = plan.newDevices.map((device) => {
      const found = this.round.results.get(device.devMac);
      if (found === undefined) return device;
      const decision = decideName(unnamed, found.candidates);
      if (decision !== undefined) this.named++;
      return {
        ...device,
        ...(decision && { devName: decision.name, devNameSource: decision.source }),
        ...(found.fqdn !== null && { devFQDN: found.fqdn }),
      };
    });
    const planned = new Set(plan.newDevices.map((d) => d.devMac));
    const names: NameUpdate[] = [...(plan.names ?? [])];
    for (const [mac, found] of this.round.results) {
      const stored = fresh.get(mac);
      if (planned.has(mac) || stored === undefined) continue;
      const update = nameUpdate(mac, stored, found.candidates, found.fqdn);
      if (update === undefined) continue;
      if (update.name !== null) this.named++;
      names.push(update);
    }
    return { ...plan, newDevices, names };
  }
}

/** The write a lookup calls for, or undefined when nothing changes. */
function nameUpdate(
  mac: string,
  stored: StoredDeviceName,
  candidates: readonly NameCandidate[],
  fqdn: string | null,
): NameUpdate | undefined {
  const decision = decideName(stored, candidates);
  const newFqdn = fqdn !== null && fqdn !== stored.fqdn ? fqdn : null;
  if (decision === undefined && newFqdn === null) return undefined;
  return { mac, name: decision?.name ?? null, source: decision?.source ?? null, fqdn: newFqdn };
}

export interface ResolveAnswer {
  readonly name: string;
  readonly source: string;
  readonly candidates: readonly NameCandidate[];
}

export class DeviceNamer {
  private readonly lastLookup = new Map<string, number>();

  constructor(
    private readonly resolver: NameResolver,
    private readonly devices: DeviceStore,
    private readonly refreshMinutes: number,
  ) {}

  get enabled(): boolean {
    return this.resolver.enabled;
  }

  /** The devMac of the device that has `mac` (own or alias); `mac` when none has it. */
  deviceMac(mac: string): Promise<string> {
    return this.devices.resolveMac(mac);
  }

  /** Looks up the seen devices that need it (see the file comment); never throws. */
  async prepare(
    seen: ReadonlyMap<string, SeenDevice>,
    now: Date,
    signal?: AbortSignal,
  ): Promise<PreparedNames> {
    const refreshMs = this.refreshMinutes * 60_000;
    const stored = await this.devices.loadNames();
    const due = now.getTime() - refreshMs;
    for (const [mac, at] of this.lastLookup) if (at <= due || !stored.has(mac)) this.lastLookup.delete(mac);
    const targets: NameTarget[] = [];
    for (const [mac, device] of seen) {
      const name = stored.get(mac);
      if (name !== undefined && isProtected(name.source)) continue;
      if (name !== undefined && this.lastLookup.has(mac)) continue;
      targets.push({ mac, ip: device.ips[0] ?? '' });
    }
    const round =
      this.enabled && targets.length > 0
        ? await this.resolver.lookup(targets, signal)
        : { results: new Map(), errors: [] };
    for (const target of targets) this.lastLookup.set(target.mac, now.getTime());
    return new PreparedNames(round, this.devices);
  }

  /**
   * POST /device/<mac>/resolve-name: asks every enabled source now and stores the result under
   * the rules. A user or import name is reported, not replaced.
   */
  async resolve(mac: string, now: Date): Promise<ResolveAnswer> {
    const before = await this.devices.getName(mac);
    if (before === undefined) throw notFound(mac);
    const round = await this.resolver.lookup([{ mac, ip: before.ip }], undefined, { everySource: true });
    const found = round.results.get(mac);
    const candidates = found?.candidates ?? [];
    this.lastLookup.set(mac, now.getTime());
    // Decided again inside the write: the name may have changed while the sources answered.
    const after = await this.devices.resolveName(mac, (stored) =>
      nameUpdate(mac, stored, candidates, found?.fqdn ?? null),
    );
    if (after === undefined) throw notFound(mac);
    return { name: after.name, source: after.source, candidates };
  }
}

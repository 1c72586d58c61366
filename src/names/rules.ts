/**
 * The provenance rules (docs/names.md), as pure functions: which stored name an automatic source may
 * replace, and which of a device's candidates wins.
 */
import { autoSources, type AutoSource, type NameCandidate } from './types.js';

/** A name a person gave (through the API, the console, a CSV import) or a database import brought. */
export function isProtected(source: string): boolean {
  return source === 'user' || source === 'import';
}

/** The best candidate by rank (dhcp > mdns > netbios > dns), or undefined when there is none. */
function bestCandidate(candidates: readonly NameCandidate[]): NameCandidate | undefined {
  let best: NameCandidate | undefined;
  for (const candidate of candidates) {
    if (candidate.name === '') continue;
    if (best === undefined || rank(candidate.source) < rank(best.source)) best = candidate;
  }
  return best;
}

function rank(source: AutoSource): number {
  return autoSources.indexOf(source);
}

export interface StoredName {
  readonly name: string;
  /** devNameSource as stored (any text: a row written by another program may hold anything). */
  readonly source: string;
}

/**
 * The name to store given what is stored and this lookup's candidates, or undefined to leave it:
 * a user/import name is never replaced; a better-ranked source replaces a worse one; a source's
 * newer name replaces its own older one; a worse-ranked source never replaces a better one.
 */
export function decideName(
  stored: StoredName,
  candidates: readonly NameCandidate[],
): NameCandidate | undefined {
  if (isProtected(stored.source)) return undefined;
  const best = bestCandidate(candidates);
  if (best === undefined) return undefined;
  const current = (autoSources as readonly string[]).includes(stored.source)
    ? rank(stored.source as AutoSource)
    : Infinity;
  if (rank(best.source) > current) return undefined;
  if (best.source === stored.source && best.name === stored.name) return undefined;
  return best;
}

/** The vocabulary of naming, shared by the sources, the resolver, the scanner and the routes. */

/** Where a device's name came from (devNameSource); '' when it has none. */
export type NameSource = 'user' | 'import' | 'dhcp' | 'mdns' | 'netbios' | 'dns' | '';
export const nameSources: readonly NameSource[] = ['user', 'import', 'dhcp', 'mdns', 'netbios', 'dns', ''];

/** The automatic sources, best first: dhcp > mdns > netbios > dns. */
export type AutoSource = 'dhcp' | 'mdns' | 'netbios' | 'dns';
export const autoSources: readonly AutoSource[] = ['dhcp', 'mdns', 'netbios', 'dns'];

/** A source's trouble in a cycle: reported in the summary (nameSourceErrors), never a failure. */
export interface NameSourceError {
  readonly source: AutoSource;
  readonly message: string;
}

/** One source's answer for one device. */
export interface NameCandidate {
  readonly source: AutoSource;
  readonly name: string;
}

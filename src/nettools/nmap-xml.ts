/**
 * The one reader of nmap's XML report (`-oX`), shared by the port scans of /nettools/nmap and the
 * scanner's `nmap -sn` discovery. It only reads: what a missing MAC, a skipped target or an error
 * means is for each caller to decide.
 */
import { Type, type Static } from '@sinclair/typebox';
import { XMLParser } from 'fast-xml-parser';

const nullableString = () => Type.Union([Type.String(), Type.Null()]);

export const NmapPortSchema = Type.Object({
  port: Type.Integer(),
  protocol: Type.String(),
  state: nullableString(),
  service: nullableString(),
  product: nullableString(),
  version: nullableString(),
});

export type NmapPort = Static<typeof NmapPortSchema>;

/** One host of the report, as `/nettools/nmap` answers it (docs/api/nettools.md). */
export const NmapHostSchema = Type.Object({
  address: nullableString(),
  addressType: nullableString(),
  /** Lower-cased (nmap prints upper case). */
  mac: nullableString(),
  vendor: nullableString(),
  hostnames: Type.Array(Type.String()),
  state: nullableString(),
  ports: Type.Array(NmapPortSchema),
});

export type NmapHost = Static<typeof NmapHostSchema>;

/** A target nmap did not probe (it exits 0 all the same), e.g. no route from the interface. */
export interface NmapSkippedTarget {
  readonly specification: string;
  readonly reason: string;
}

export interface NmapReport {
  readonly hosts: NmapHost[];
  readonly skipped: NmapSkippedTarget[];
  /** nmap's message when the run finished with exit="error"; null otherwise. */
  readonly error: string | null;
}

/** Elements that may repeat: always arrays, also when there is one. */
const repeated = new Set(['host', 'address', 'hostname', 'port', 'target']);

const xmlParser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  parseAttributeValue: false,
  isArray: (name) => repeated.has(name),
});

type XmlNode = Record<string, unknown>;

function node(value: unknown): XmlNode {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as XmlNode) : {};
}
function nodes(value: unknown): XmlNode[] {
  return Array.isArray(value) ? value.map(node) : [];
}
function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/** Throws when the text is not XML or holds no `<nmaprun>`. */
export function parseNmapXml(xml: string): NmapReport {
  let parsed: unknown;
  try {
    parsed = xmlParser.parse(xml);
  } catch (err) {
    throw new Error(`nmap output is not XML: ${err instanceof Error ? err.message : String(err)}`);
  }
  const run = node(parsed).nmaprun;
  if (typeof run !== 'object' || run === null) throw new Error('nmap output holds no <nmaprun>');
  const root = node(run);
  const finished = node(node(root.runstats).finished);
  return {
    hosts: nodes(root.host).map(hostOf),
    skipped: nodes(root.target)
      .filter((target) => target['@_status'] === 'skipped')
      .map((target) => ({
        specification: text(target['@_specification']) ?? '?',
        reason: text(target['@_reason']) ?? 'no reason given',
      })),
    error: finished['@_exit'] === 'error' ? (text(finished['@_errormsg']) ?? 'nmap reported an error') : null,
  };
}

function hostOf(host: XmlNode): NmapHost {
  const addresses = nodes(host.address);
  const ip =
    addresses.find((a) => a['@_addrtype'] === 'ipv4') ?? addresses.find((a) => a['@_addrtype'] === 'ipv6');
  const mac = addresses.find((a) => a['@_addrtype'] === 'mac');
  return {
    address: text(ip?.['@_addr']),
    addressType: text(ip?.['@_addrtype']),
    mac: text(mac?.['@_addr'])?.toLowerCase() ?? null,
    vendor: text(mac?.['@_vendor']),
    hostnames: nodes(node(host.hostnames).hostname)
      .map((h) => text(h['@_name']))
      .filter((name): name is string => name !== null),
    state: text(node(host.status)['@_state']),
    ports: nodes(node(host.ports).port).map((port) => {
      const service = node(port.service);
      return {
        port: Number(port['@_portid']),
        protocol: text(port['@_protocol']) ?? 'tcp',
        state: text(node(port.state)['@_state']),
        service: text(service['@_name']),
        product: text(service['@_product']),
        version: text(service['@_version']),
      };
    }),
  };
}

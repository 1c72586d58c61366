/**
 * The network map: the tree of devParentMAC / devParentPort, laid out by d3-hierarchy's tidy tree.
 * Devices with no parent (or a parent that is not a known device) hang off their site's root
 * ("local" when devSite is empty). Subtrees start collapsed and only expanded nodes are laid out
 * and drawn (a node shows at most `pageSize` children until asked for more), so 10,000 devices
 * stay quick. Each node is an HTML element holding the device's name and status, which screen
 * readers, the search and tests can find. Drag a device onto another to make it its parent.
 */
import { hierarchy, tree, type HierarchyPointNode } from 'd3-hierarchy';
import { useMemo, useState } from 'preact/hooks';
import { api, describe } from '../api';
import { Busy, ErrorNote, useGet, useLiveChanges } from '../components';
import { Link } from '../router';

/** A device as GET /devices/map answers it: only what the map draws (a sixth of the whole list). */
interface MapDevice {
  readonly devMac: string;
  readonly devName: string;
  readonly devStatus: string;
  readonly devParentMAC: string;
  readonly devParentPort: number | null;
  readonly devSite: string;
  readonly devType: string;
}

/** A node of the tree: a site root (no device) or a device. */
interface MapNode {
  readonly id: string;
  readonly device?: MapDevice;
  readonly label: string;
  readonly children: MapNode[];
  readonly parent?: MapNode;
}

/** What is drawn: a node, or the "N more" button standing for a node's children not shown yet. */
interface Shown {
  readonly node?: MapNode;
  readonly more?: { readonly of: MapNode; readonly hidden: number };
  readonly children?: Shown[];
}

const pageSize = 100;
const rowHeight = 44;
/** Narrower columns on a phone, so that two levels fit beside each other. */
const columnWidth = window.matchMedia('(max-width: 640px)').matches ? 180 : 250;
const rootPrefix = 'site:';

/**
 * Natural order of names, ignoring case. One collator for every comparison: `localeCompare` with
 * options sets up its rules again on each call (sorting 10,000 names: ~520 ms against ~13 ms with
 * one collator, in Chromium), which was most of the map's first paint at 10,000 devices.
 */
const naturalOrder = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

function byName(a: MapNode, b: MapNode): number {
  // Parents first (they hold the rest of the tree), then names in natural order.
  if (a.children.length > 0 !== b.children.length > 0) return a.children.length > 0 ? -1 : 1;
  return naturalOrder.compare(a.label, b.label);
}

/**
 * Builds the forest: one root per site; a parent link that is unknown or loops goes to the root.
 * A device with no site is the hub's own (`ownSite`, its SITE_NAME: what its scans write), so that
 * the hub's devices make one root, first, whether a scan or a person added them.
 */
function buildTree(
  devices: readonly MapDevice[],
  ownSite: string,
): { roots: MapNode[]; byMac: Map<string, MapNode> } {
  const byMac = new Map<string, MapDevice>(devices.map((d) => [d.devMac, d]));
  const parentOf = (d: MapDevice): string | undefined => {
    const p = d.devParentMAC;
    return p !== '' && p !== d.devMac && byMac.has(p) ? p : undefined;
  };
  // A link is kept when walking up from it ends at a device with no parent (no stored loop).
  const anchored = new Map<string, boolean>();
  const isAnchored = (mac: string): boolean => {
    const path: string[] = [];
    const seen = new Set<string>();
    let at: string | undefined = mac;
    let result = true;
    while (at !== undefined) {
      const known = anchored.get(at);
      if (known !== undefined) {
        result = known;
        break;
      }
      if (seen.has(at)) {
        result = false;
        break;
      }
      seen.add(at);
      path.push(at);
      const device = byMac.get(at);
      at = device === undefined ? undefined : parentOf(device);
    }
    for (const m of path) anchored.set(m, result);
    return result;
  };
  const nodes = new Map<string, MapNode & { children: MapNode[] }>();
  const roots = new Map<string, MapNode & { children: MapNode[] }>();
  const rootOf = (site: string) => {
    let root = roots.get(site);
    if (root === undefined) {
      root = { id: rootPrefix + site, label: site, children: [] };
      roots.set(site, root);
    }
    return root;
  };
  for (const d of devices)
    nodes.set(d.devMac, { id: d.devMac, device: d, label: d.devName || d.devMac, children: [] });
  for (const d of devices) {
    const node = nodes.get(d.devMac);
    if (node === undefined) continue;
    const parentMac = parentOf(d);
    const parent = parentMac !== undefined && isAnchored(d.devMac) ? nodes.get(parentMac) : undefined;
    const home = parent ?? rootOf(d.devSite || ownSite);
    home.children.push(node);
    (node as { parent?: MapNode }).parent = home;
  }
  for (const n of [...nodes.values(), ...roots.values()]) n.children.sort(byName);
  const sortedRoots = [...roots.values()].sort((a, b) =>
    a.label === ownSite ? -1 : b.label === ownSite ? 1 : byName(a, b),
  );
  return { roots: sortedRoots, byMac: nodes };
}

/** Whether `node` is `ancestor` or lies below it. */
function isUnder(node: MapNode | undefined, ancestor: MapNode): boolean {
  for (let at = node; at !== undefined; at = at.parent) if (at === ancestor) return true;
  return false;
}

function statusTone(status: string): string {
  return status === 'On-line' ? 'ok' : status === 'Down' ? 'bad' : 'off';
}

export function MapPage() {
  const list = useGet<{ devices: MapDevice[] }>('/devices/map');
  useLiveChanges(() => {
    list.reload();
  });
  // SITE_NAME, read from the settings (the default until they answer, or when they cannot).
  const settings = useGet<{ settings: readonly { name: string; value: string }[] }>('/settings');
  const ownSite = settings.data?.settings.find((s) => s.name === 'SITE_NAME')?.value || 'local';
  const { roots, byMac } = useMemo(() => buildTree(list.data?.devices ?? [], ownSite), [list.data, ownSite]);
  // Site roots start expanded, every device collapsed.
  const [collapsedRoots, setCollapsedRoots] = useState<ReadonlySet<string>>(new Set());
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set());
  const [limits, setLimits] = useState<ReadonlyMap<string, number>>(new Map());
  const [query, setQuery] = useState('');
  const [found, setFound] = useState<string>();
  const [message, setMessage] = useState<{ text: string; error: boolean }>();
  const [dragging, setDragging] = useState<string>();
  const [saving, setSaving] = useState(false);

  const isOpen = (n: MapNode) => (n.device ? expanded.has(n.id) : !collapsedRoots.has(n.id));
  const toggle = (n: MapNode) => {
    if (n.device) {
      const next = new Set(expanded);
      if (!next.delete(n.id)) next.add(n.id);
      setExpanded(next);
    } else {
      const next = new Set(collapsedRoots);
      if (!next.delete(n.id)) next.add(n.id);
      setCollapsedRoots(next);
    }
  };

  const layout = useMemo(() => {
    const shown = (n: MapNode): Shown => {
      if (!isOpen(n) || n.children.length === 0) return { node: n };
      const limit = limits.get(n.id) ?? pageSize;
      const children: Shown[] = n.children.slice(0, limit).map(shown);
      if (n.children.length > limit) children.push({ more: { of: n, hidden: n.children.length - limit } });
      return { node: n, children };
    };
    const top: Shown = { children: roots.map(shown) };
    const laid = tree<Shown>().nodeSize([rowHeight, columnWidth])(hierarchy(top, (s) => s.children));
    // The tidy tree puts a parent halfway down its children: a site with 200 devices would sit 100
    // rows below its first one, behind empty space. Like a file tree, a parent goes level with its
    // first child instead, pushed down only as far as needed to stay below its column's previous
    // node; and a node is never above its parent (a parent pushed down takes its children along),
    // so that a subtree reads downwards from its parent. In pre-order, each column is visited from
    // top to bottom and a parent before its children.
    laid.eachAfter((d) => {
      const first = d.children?.[0];
      if (first !== undefined) d.x = first.x;
    });
    const lastInColumn = new Map<number, number>();
    const items: HierarchyPointNode<Shown>[] = [];
    laid.eachBefore((d) => {
      if (d.depth === 0) return;
      const above = lastInColumn.get(d.depth);
      if (above !== undefined && d.x < above + rowHeight) d.x = above + rowHeight;
      if (d.parent !== null && d.parent.depth > 0 && d.x < d.parent.x) d.x = d.parent.x;
      lastInColumn.set(d.depth, d.x);
      items.push(d);
    });
    const minX = items.length === 0 ? 0 : Math.min(...items.map((d) => d.x));
    const maxX = Math.max(minX, ...items.map((d) => d.x));
    const maxDepth = Math.max(1, ...items.map((d) => d.depth));
    return { items, minX, height: maxX - minX + rowHeight, width: maxDepth * columnWidth };
  }, [roots, expanded, collapsedRoots, limits]);

  const pos = (d: HierarchyPointNode<Shown>) => ({
    left: (d.depth - 1) * columnWidth,
    top: d.x - layout.minX,
  });

  /** Opens every ancestor of the first match and shows it. */
  const search = (text: string) => {
    const words = text.toLowerCase().split(/\s+/).filter(Boolean);
    if (words.length === 0) {
      setFound(undefined);
      return;
    }
    const match = [...byMac.values()]
      .filter((n) => words.every((w) => `${n.label} ${n.id}`.toLowerCase().includes(w)))
      .sort(byName)[0];
    if (match === undefined) {
      setFound(undefined);
      setMessage({ text: `No device matches “${text}”.`, error: true });
      return;
    }
    setMessage(undefined);
    const open = new Set(expanded);
    const openRoots = new Set(collapsedRoots);
    const nextLimits = new Map(limits);
    for (let child: MapNode = match, at = match.parent; at !== undefined; child = at, at = at.parent) {
      if (at.device) open.add(at.id);
      else openRoots.delete(at.id);
      const index = at.children.indexOf(child);
      if (index >= (nextLimits.get(at.id) ?? pageSize)) nextLimits.set(at.id, index + 1);
    }
    setExpanded(open);
    setCollapsedRoots(openRoots);
    setLimits(nextLimits);
    setFound(match.id);
    requestAnimationFrame(() => {
      const element = document.querySelector<HTMLElement>(`[data-node="${CSS.escape(match.id)}"]`);
      element?.scrollIntoView({ block: 'center', inline: 'center' });
      element?.focus();
    });
  };

  /** Makes `target` (a device, or a site root: no parent) the parent of `mac`. */
  const reparent = async (mac: string, target: MapNode) => {
    const child = byMac.get(mac);
    if (child === undefined || child === target) return;
    if (target.device && isUnder(target, child)) {
      setMessage({
        text: `${target.label} is below ${child.label}: ${child.label} cannot hang under its own descendant.`,
        error: true,
      });
      return;
    }
    setSaving(true);
    setMessage(undefined);
    try {
      await api('POST', `/device/${encodeURIComponent(mac)}`, {
        body: { devParentMAC: target.device ? target.id : '' },
      });
      setMessage({ text: `${child.label} now hangs under ${target.label}.`, error: false });
      if (target.device) setExpanded(new Set([...expanded, target.id]));
      list.reload();
    } catch (err) {
      setMessage({ text: describe(err), error: true });
    } finally {
      setSaving(false);
    }
  };

  const links = layout.items.filter((d) => d.parent !== null && d.parent.depth > 0);
  return (
    <>
      <div class="page-head">
        <h1>Network map</h1>
        <Link href="/devices/new?placeholder=switch" class="button">
          Add an unmanaged switch
        </Link>
      </div>
      <div class="card map-card">
        <form
          class="map-tools"
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            search(query);
          }}
        >
          <div class="field grow">
            <label for="map-search">Find a device</label>
            <input
              id="map-search"
              type="search"
              value={query}
              placeholder="name or MAC"
              onInput={(e) => {
                setQuery(e.currentTarget.value);
              }}
            />
          </div>
          <button type="submit">Find</button>
        </form>
        <p class="hint">
          Drag a device onto another to make it its parent, or onto a site to detach it.{' '}
          {list.data?.devices.length ?? 0} devices.
        </p>
        <ErrorNote error={list.error} />
        {message && (
          <p class={`note ${message.error ? 'error' : 'ok'}`} role={message.error ? 'alert' : 'status'}>
            {message.text}
          </p>
        )}
        {(list.loading || saving) && !list.data && <Busy label="Loading the map…" />}
        <div class="map-scroll">
          <div
            class="map"
            role="tree"
            aria-label="Network map"
            style={{ width: `${layout.width}px`, height: `${layout.height}px` }}
          >
            <svg class="map-links" width={layout.width} height={layout.height} aria-hidden="true">
              {links.map((d) => {
                const parent = d.parent as HierarchyPointNode<Shown>;
                const from = pos(parent);
                const to = pos(d);
                const x1 = from.left + columnWidth - 40;
                const y1 = from.top + rowHeight / 2;
                const x2 = to.left;
                const y2 = to.top + rowHeight / 2;
                const mid = (x1 + x2) / 2;
                return (
                  <path
                    key={`${parent.data.node?.id ?? ''}>${d.data.node?.id ?? 'more'}`}
                    d={`M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`}
                  />
                );
              })}
            </svg>
            {layout.items.map((d) => {
              const { left, top } = pos(d);
              if (d.data.more) {
                const { of, hidden } = d.data.more;
                return (
                  <button
                    key={`${of.id}-more`}
                    type="button"
                    class="map-more"
                    style={{ left: `${left}px`, top: `${top}px`, width: `${columnWidth - 40}px` }}
                    onClick={() => {
                      setLimits(new Map(limits).set(of.id, (limits.get(of.id) ?? pageSize) + pageSize));
                    }}
                  >
                    {hidden} more…
                  </button>
                );
              }
              const node = d.data.node as MapNode;
              const device = node.device;
              const open = isOpen(node);
              const port = device?.devParentPort;
              return (
                <div
                  key={node.id}
                  role="treeitem"
                  aria-level={d.depth}
                  aria-expanded={node.children.length > 0 ? open : undefined}
                  aria-label={device ? `${node.label}, ${device.devStatus}` : `Site ${node.label}`}
                  tabIndex={-1}
                  data-node={node.id}
                  data-status={device?.devStatus}
                  title={device?.devType ? `${node.label} (${device.devType})` : undefined}
                  class={`map-node ${device ? statusTone(device.devStatus) : 'site'}${found === node.id ? ' found' : ''}${dragging !== undefined && dragging !== node.id ? ' drop-ok' : ''}`}
                  style={{ left: `${left}px`, top: `${top}px`, width: `${columnWidth - 40}px` }}
                  draggable={device !== undefined}
                  onDragStart={(e) => {
                    if (!device) return;
                    e.dataTransfer?.setData('text/plain', node.id);
                    setDragging(node.id);
                  }}
                  onDragEnd={() => {
                    setDragging(undefined);
                  }}
                  onDragOver={(e) => {
                    e.preventDefault();
                  }}
                  onDrop={(e) => {
                    e.preventDefault();
                    const mac = e.dataTransfer?.getData('text/plain') ?? dragging;
                    setDragging(undefined);
                    if (mac) void reparent(mac, node);
                  }}
                >
                  {node.children.length > 0 ? (
                    <button
                      type="button"
                      class="map-toggle"
                      aria-label={`${open ? 'Collapse' : 'Expand'} ${node.label} (${node.children.length})`}
                      onClick={() => {
                        toggle(node);
                      }}
                    >
                      {open ? '−' : '+'}
                      <span class="map-count">{node.children.length}</span>
                    </button>
                  ) : (
                    <span class="map-toggle-space" />
                  )}
                  {device ? (
                    <>
                      <span class={`dot ${statusTone(device.devStatus)}`} title={device.devStatus} />
                      <Link href={`/devices/${encodeURIComponent(device.devMac)}`} class="map-name">
                        {node.label}
                      </Link>
                      {port !== null && port !== undefined && <span class="map-port">port {port}</span>}
                    </>
                  ) : (
                    <strong class="map-name">{node.label}</strong>
                  )}
                </div>
              );
            })}
          </div>
        </div>
      </div>
    </>
  );
}

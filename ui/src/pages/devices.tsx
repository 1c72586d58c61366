/**
 * The device list: counters per status group, a status filter, a presence filter (sleeping,
 * flapping), a site filter, search, sort by column, and paging
 * done by the server, so that 10,000 devices cost one page of rows. Filters live in the URL.
 * Rows can be selected (one by one, the page, or the whole filtered list) for a bulk edit: one
 * field set on all of them, or their deletion, in one `POST /devices/bulk`.
 */
import { bulkFields, deviceGroups, fields, listStatuses, totalsNames } from 'netkeep:catalogue';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, get } from '../api';
import {
  Busy,
  Confirmed,
  EmptyRow,
  ErrorNote,
  Pager,
  StatusBadge,
  Time,
  useAction,
  useGet,
  useLiveChanges,
} from '../components';
import { FieldInput, fromInput, labels, toInput } from '../fields';
import { Link, navigate, setQuery, useLocation } from '../router';

export interface DeviceItem {
  readonly devMac: string;
  readonly devName: string;
  readonly devStatus: string;
  readonly devLastIP: string;
  readonly devVendor: string;
  readonly devOwner: string;
  readonly devType: string;
  readonly devLastConnection: string | null;
  readonly devFavorite: number;
  readonly devIsNew: number;
  readonly devIsArchived: number;
  readonly devSleeping?: number;
  readonly devFlapping?: number;
  readonly devPrimaryIPv6?: string;
  readonly devRandomMac?: number;
  readonly devSite?: string;
}

/** The mark of a random ("private") MAC, which a phone or laptop may rotate (docs/random-macs.md). */
export function RandomMacBadge() {
  return (
    <span
      class="tag random"
      title="Random (private) MAC: the device may change it. netkeep links a new one when DHCP shows it is the same device; otherwise merge the two by hand."
    >
      random MAC
    </span>
  );
}

interface DevicePage {
  readonly devices: DeviceItem[];
  readonly total: number;
  readonly offset: number;
  readonly limit: number;
}

const groupLabels: Readonly<Record<string, string>> = {
  my: 'Devices',
  connected: 'Connected',
  favorites: 'Favorites',
  new: 'New',
  down: 'Down',
  archived: 'Archived',
};

const statusLabels: Readonly<Record<string, string>> = {
  ...groupLabels,
  my: 'Devices (not archived)',
  all: 'All, archived included',
  'On-line': 'On-line (archived included)',
  'Off-line': 'Off-line (archived included)',
  Down: 'Down (archived included)',
};

const columns = [
  { key: 'devName', label: 'Name' },
  { key: 'devStatus', label: 'Status' },
  { key: 'devMac', label: 'MAC', className: 'mono roomy' },
  { key: 'devLastIP', label: 'IP', className: 'mono' },
  { key: 'devVendor', label: 'Vendor', className: 'wide' },
  { key: 'devOwner', label: 'Owner', className: 'wide' },
  { key: 'devType', label: 'Type', className: 'wide' },
  { key: 'devSite', label: 'Site', className: 'wide' },
  { key: 'devLastConnection', label: 'Last seen', className: 'wide' },
] as const;

const pageSizes = [25, 50, 100, 200];

/** The presence filter: each value is one `GET /devices` flag filter (sleeping=1, flapping=1). */
const presenceFilters: readonly { value: string; label: string }[] = [
  { value: '', label: 'Any' },
  { value: 'sleeping', label: 'Sleeping' },
  { value: 'flapping', label: 'Flapping' },
];

/** The site filter's value for devices with no site (`GET /devices?site=`). */
const noSite = '(none)';

/**
 * The sites a device can have: the hub's own (SITE_NAME) and every probe's. Asked once per page;
 * a server without probes (404) or a failed answer leaves just the ones known.
 */
function useSites(current: string): string[] {
  const probes = useGet<{ probes: readonly { site: string }[] }>('/probes');
  const settings = useGet<{ settings: readonly { name: string; value: string }[] }>('/settings');
  const own = settings.data?.settings.find((s) => s.name === 'SITE_NAME')?.value;
  const sites = new Set<string>();
  if (own) sites.add(own);
  for (const p of probes.data?.probes ?? []) sites.add(p.site);
  if (current && current !== noSite) sites.add(current);
  return [...sites].sort((a, b) => a.localeCompare(b));
}

/** The largest page `GET /devices` answers: "select all" of a filter reads the list in such pages. */
const listPageMax = 1000;

interface BulkAnswer {
  readonly changed: string[];
  readonly failed: { mac: string; code: string; message: string }[];
}

type BulkOutcome = BulkAnswer & { readonly verb: string };

/** What the last bulk edit did, kept on the page after its selection is gone. */
function BulkOutcomeNote({ outcome }: { readonly outcome: BulkOutcome | undefined }) {
  if (outcome === undefined) return null;
  return (
    <div role="status" class="bulk-outcome">
      <p>
        {outcome.changed.length.toLocaleString()} device{outcome.changed.length === 1 ? '' : 's'}{' '}
        {outcome.verb}.
        {outcome.failed.length > 0 &&
          ` ${outcome.failed.length.toLocaleString()} could not be ${outcome.verb} (still selected):`}
      </p>
      {outcome.failed.length > 0 && (
        <ul class="failed">
          {outcome.failed.slice(0, 50).map((f) => (
            <li key={f.mac}>
              <span class="mono">{f.mac}</span>: {f.message}
            </li>
          ))}
          {outcome.failed.length > 50 && <li>and {(outcome.failed.length - 50).toLocaleString()} more</li>}
        </ul>
      )}
    </div>
  );
}

const bulkEditable = bulkFields
  .map((name) => fields.find((f) => f.name === name))
  .filter((f): f is (typeof fields)[number] => f !== undefined);

/**
 * The bulk edit of the selected devices: pick a field, give its value, apply it to all of them; or
 * delete them all. The answer says how many changed and which could not (deleted meanwhile, or a
 * parent that would loop); those stay selected.
 */
function BulkEdit(props: {
  readonly selected: ReadonlySet<string>;
  readonly onDone: (outcome: BulkOutcome) => void;
  readonly onClear: () => void;
}) {
  const { selected, onDone, onClear } = props;
  const [name, setName] = useState(bulkEditable[0]?.name ?? '');
  const field = bulkEditable.find((f) => f.name === name);
  const [value, setValue] = useState<string | boolean>(field ? toInput(field, field.default) : '');
  const action = useAction();
  const count = selected.size;
  const noun = `${count.toLocaleString()} device${count === 1 ? '' : 's'}`;

  const send = async (edit: () => Record<string, unknown>, verb: string) => {
    await action.run(async () => {
      const answer = await api<BulkAnswer>('POST', '/devices/bulk', {
        body: { macs: [...selected], ...edit() },
      });
      onDone({ ...answer, verb });
    });
  };

  return (
    <section class="bulk card" aria-labelledby="bulk-title">
      <h2 id="bulk-title">{noun} selected</h2>
      <form
        class="bulk-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (field === undefined) return;
          // A value the field cannot take (fromInput throws) is shown like the server's refusals.
          void send(() => ({ set: { [field.name]: fromInput(field, value) } }), 'changed');
        }}
      >
        <div class="field">
          <label for="bulk-field">Field to set</label>
          <select
            id="bulk-field"
            value={name}
            onChange={(e) => {
              const next = bulkEditable.find((f) => f.name === e.currentTarget.value);
              setName(e.currentTarget.value);
              if (next) setValue(toInput(next, next.default));
            }}
          >
            {bulkEditable.map((f) => (
              <option key={f.name} value={f.name}>
                {labels[f.name] ?? f.name}
              </option>
            ))}
          </select>
        </div>
        {field && (
          <FieldInput key={field.name} field={field} value={value} onChange={setValue} idPrefix="bulk" />
        )}
        <div class="form-actions">
          <button type="submit" class="primary" disabled={action.running || count === 0}>
            {action.running ? 'Applying…' : `Set for ${noun}`}
          </button>
          <Confirmed
            label={`Delete ${noun}…`}
            question={`Delete ${noun} with their history?`}
            confirm={`Delete ${noun}`}
            disabled={action.running || count === 0}
            onConfirm={() => void send(() => ({ delete: true }), 'deleted')}
          />
          <button type="button" onClick={onClear} disabled={action.running}>
            Clear selection
          </button>
        </div>
      </form>
      <ErrorNote error={action.error} />
    </section>
  );
}

export function DeviceList() {
  const { search } = useLocation();
  const status = search.get('status') ?? 'my';
  const q = search.get('q') ?? '';
  const sort = search.get('sort') ?? 'devName';
  const order = search.get('order') === 'desc' ? 'desc' : 'asc';
  const limit = Number(search.get('limit')) || 50;
  const offset = Number(search.get('offset')) || 0;
  const presence = presenceFilters.some((f) => f.value === search.get('presence'))
    ? (search.get('presence') ?? '')
    : '';
  const site = search.get('site') ?? '';
  const sites = useSites(site);
  const state = { status, q, sort, order, limit, offset, presence, site };
  const update = (changes: Partial<typeof state>) => {
    const next = { ...state, offset: 0, ...changes };
    setQuery({
      status: next.status === 'my' ? undefined : next.status,
      q: next.q,
      sort: next.sort === 'devName' ? undefined : next.sort,
      order: next.order === 'asc' ? undefined : next.order,
      limit: next.limit === 50 ? undefined : next.limit,
      offset: next.offset || undefined,
      presence: next.presence || undefined,
      site: next.site || undefined,
    });
  };

  const params = new URLSearchParams({ status, sort, order, limit: String(limit), offset: String(offset) });
  if (q.trim()) params.set('q', q.trim());
  if (presence) params.set(presence, '1');
  if (site) params.set('site', site === noSite ? '' : site);
  const list = useGet<DevicePage>(`/devices?${params.toString()}`);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const selectAll = useAction();
  const [bulkOutcome, setBulkOutcome] = useState<BulkOutcome>();
  const pageMacs = list.data?.devices.map((d) => d.devMac) ?? [];
  const pageSelected = pageMacs.length > 0 && pageMacs.every((m) => selected.has(m));
  const toggle = (macs: readonly string[], on: boolean) => {
    setSelected((old) => {
      const next = new Set(old);
      for (const m of macs) {
        if (on) next.add(m);
        else next.delete(m);
      }
      return next;
    });
  };
  // Every device of the filter, read in the largest pages the list answers.
  const selectFiltered = () =>
    selectAll.run(async () => {
      const macs: string[] = [];
      for (let from = 0; ; from += listPageMax) {
        const all = new URLSearchParams(params);
        all.set('offset', String(from));
        all.set('limit', String(listPageMax));
        const page = await get<DevicePage>(`/devices?${all.toString()}`);
        macs.push(...page.devices.map((d) => d.devMac));
        if (page.devices.length < listPageMax || macs.length >= page.total) break;
      }
      toggle(macs, true);
    });
  const totals = useGet<{ totals: Record<string, number> }>('/devices/totals/named');
  useLiveChanges(() => {
    list.reload();
    totals.reload();
  });

  // The search box updates the URL (and so the list) 80 ms after typing stops: fast typing sends
  // one request, and the wait stays well below what a person notices.
  // The box follows the URL only when the URL changed by other means (back, a link): a search sent
  // while the person kept typing must not put the older text back into the box.
  const [text, setText] = useState(q);
  const typing = useRef<number | undefined>(undefined);
  const sent = useRef(q);
  useEffect(() => {
    if (q !== sent.current) setText(q);
    sent.current = q;
  }, [q]);
  const onSearch = (value: string) => {
    setText(value);
    window.clearTimeout(typing.current);
    typing.current = window.setTimeout(() => {
      sent.current = value;
      update({ q: value });
    }, 80);
  };

  return (
    <>
      <div class="page-head">
        <h1>Devices</h1>
        {list.loading && <Busy label="Loading" />}
      </div>
      <ul class="counters" aria-label="Devices per status">
        {deviceGroups.map((group) => {
          const name = totalsNames[group] ?? group;
          const count = totals.data?.totals[name];
          return (
            <li key={group}>
              <button
                type="button"
                class={`counter ${group}`}
                aria-pressed={status === group}
                onClick={() => {
                  update({ status: group });
                }}
              >
                <span class="count">{count === undefined ? '–' : count.toLocaleString()}</span>
                <span class="label">{groupLabels[group] ?? group}</span>
              </button>
            </li>
          );
        })}
      </ul>
      <ErrorNote error={totals.error} />
      <form
        class="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
        }}
      >
        <div class="field grow">
          <label for="device-search">Search</label>
          <input
            id="device-search"
            type="search"
            placeholder="Name, MAC, IP, vendor or owner"
            value={text}
            onInput={(e) => {
              onSearch(e.currentTarget.value);
            }}
          />
        </div>
        <div class="field">
          <label for="device-status">Show</label>
          <select
            id="device-status"
            value={status}
            onChange={(e) => {
              update({ status: e.currentTarget.value });
            }}
          >
            {listStatuses.map((s) => (
              <option key={s} value={s}>
                {statusLabels[s] ?? s}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="device-presence">Presence</label>
          <select
            id="device-presence"
            value={presence}
            onChange={(e) => {
              update({ presence: e.currentTarget.value });
            }}
          >
            {presenceFilters.map((f) => (
              <option key={f.value} value={f.value}>
                {f.label}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="device-site">Site</label>
          <select
            id="device-site"
            value={site}
            onChange={(e) => {
              update({ site: e.currentTarget.value });
            }}
          >
            <option value="">Any</option>
            {sites.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
            <option value={noSite}>No site</option>
          </select>
        </div>
        <div class="field">
          <label for="device-page-size">Per page</label>
          <select
            id="device-page-size"
            value={String(limit)}
            onChange={(e) => {
              update({ limit: Number(e.currentTarget.value) });
            }}
          >
            {pageSizes.map((n) => (
              <option key={n} value={String(n)}>
                {n}
              </option>
            ))}
          </select>
        </div>
      </form>
      <div class="list-actions">
        <button
          type="button"
          onClick={() => {
            navigate('/devices/new');
          }}
        >
          Add device
        </button>
        {list.data && list.data.total > pageMacs.length && (
          <button type="button" onClick={() => void selectFiltered()} disabled={selectAll.running}>
            {selectAll.running ? 'Selecting…' : `Select all ${list.data.total.toLocaleString()} listed`}
          </button>
        )}
        <ErrorNote error={selectAll.error} />
      </div>
      <BulkOutcomeNote outcome={bulkOutcome} />
      {selected.size > 0 && (
        <BulkEdit
          selected={selected}
          onDone={(outcome) => {
            setBulkOutcome(outcome);
            setSelected(new Set(outcome.failed.map((f) => f.mac)));
            list.reload();
            totals.reload();
          }}
          onClear={() => {
            setSelected(new Set());
          }}
        />
      )}
      <ErrorNote error={list.error} />
      <div class="table-wrap">
        <table class="devices" aria-busy={list.loading}>
          <caption class="sr-only">
            Devices, sorted by {sort} {order === 'asc' ? 'ascending' : 'descending'}
          </caption>
          <thead>
            <tr>
              <th scope="col" class="select">
                <input
                  type="checkbox"
                  aria-label="Select every device on this page"
                  checked={pageSelected}
                  disabled={pageMacs.length === 0}
                  onChange={(e) => {
                    toggle(pageMacs, e.currentTarget.checked);
                  }}
                />
              </th>
              {columns.map((c) => {
                const active = sort === c.key;
                return (
                  <th
                    key={c.key}
                    scope="col"
                    class={'className' in c ? c.className : undefined}
                    aria-sort={active ? (order === 'asc' ? 'ascending' : 'descending') : undefined}
                  >
                    <button
                      type="button"
                      class="sort"
                      onClick={() => {
                        update({ sort: c.key, order: active && order === 'asc' ? 'desc' : 'asc' });
                      }}
                    >
                      {c.label}
                      <span aria-hidden="true" class="arrow">
                        {active ? (order === 'asc' ? '▲' : '▼') : ''}
                      </span>
                    </button>
                  </th>
                );
              })}
            </tr>
          </thead>
          <tbody>
            {list.data?.devices.map((d) => (
              <tr key={d.devMac} class={selected.has(d.devMac) ? 'selected' : undefined}>
                <td class="select">
                  <input
                    type="checkbox"
                    aria-label={`Select ${d.devName || d.devMac}`}
                    checked={selected.has(d.devMac)}
                    onChange={(e) => {
                      toggle([d.devMac], e.currentTarget.checked);
                    }}
                  />
                </td>
                <td>
                  <Link href={`/devices/${d.devMac}`} class="device-link">
                    {d.devName || '(no name)'}
                  </Link>
                  {d.devFavorite === 1 && (
                    <span class="tag fav" title="Favorite">
                      ★<span class="sr-only">favorite</span>
                    </span>
                  )}
                  {d.devIsNew === 1 && <span class="tag new">new</span>}
                  {d.devIsArchived === 1 && <span class="tag">archived</span>}
                </td>
                <td>
                  <StatusBadge status={d.devStatus} />
                  {d.devSleeping === 1 && <span class="tag">sleeping</span>}
                  {d.devFlapping === 1 && <span class="tag flapping">flapping</span>}
                </td>
                <td class="mono roomy">
                  {d.devMac}
                  {d.devRandomMac === 1 && <RandomMacBadge />}
                </td>
                <td class="mono">{d.devLastIP || d.devPrimaryIPv6}</td>
                <td class="wide">{d.devVendor}</td>
                <td class="wide">{d.devOwner}</td>
                <td class="wide">{d.devType}</td>
                <td class="wide">{d.devSite}</td>
                <td class="wide">
                  <Time value={d.devLastConnection} />
                </td>
              </tr>
            ))}
            {list.data && list.data.devices.length === 0 && (
              <EmptyRow columns={columns.length + 1}>
                {q ? `No device matches “${q}”.` : 'No devices here yet.'}
              </EmptyRow>
            )}
          </tbody>
        </table>
      </div>
      <Pager
        page={list.data}
        noun="devices"
        onOffset={(o) => {
          update({ offset: o });
        }}
      />
    </>
  );
}

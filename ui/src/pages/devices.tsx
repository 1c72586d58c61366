/**
 * The device list: counters per status group, a status filter, a presence filter (sleeping,
 * flapping), search, sort by column, and paging
 * done by the server, so that 10,000 devices cost one page of rows. Filters live in the URL.
 */
import { deviceGroups, listStatuses, totalsNames } from 'netkeep:catalogue';
import { useEffect, useRef, useState } from 'preact/hooks';
import { Busy, EmptyRow, ErrorNote, Pager, StatusBadge, Time, useGet, useLiveChanges } from '../components';
import { Link, setQuery, useLocation } from '../router';

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
  { key: 'devLastConnection', label: 'Last seen', className: 'wide' },
] as const;

const pageSizes = [25, 50, 100, 200];

/** The presence filter: each value is one `GET /devices` flag filter (sleeping=1, flapping=1). */
const presenceFilters: readonly { value: string; label: string }[] = [
  { value: '', label: 'Any' },
  { value: 'sleeping', label: 'Sleeping' },
  { value: 'flapping', label: 'Flapping' },
];

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
  const state = { status, q, sort, order, limit, offset, presence };
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
    });
  };

  const params = new URLSearchParams({ status, sort, order, limit: String(limit), offset: String(offset) });
  if (q.trim()) params.set('q', q.trim());
  if (presence) params.set(presence, '1');
  const list = useGet<DevicePage>(`/devices?${params.toString()}`);
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
      <ErrorNote error={list.error} />
      <div class="table-wrap">
        <table class="devices" aria-busy={list.loading}>
          <caption class="sr-only">
            Devices, sorted by {sort} {order === 'asc' ? 'ascending' : 'descending'}
          </caption>
          <thead>
            <tr>
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
              <tr key={d.devMac}>
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
                <td class="wide">
                  <Time value={d.devLastConnection} />
                </td>
              </tr>
            ))}
            {list.data && list.data.devices.length === 0 && (
              <EmptyRow columns={columns.length}>
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

/** The event log across every device: filter by type and time, newest first, paged by the server. */
import { eventTypes } from 'netkeep:catalogue';
import { Busy, EmptyRow, ErrorNote, EventType, Pager, Time, useGet, useLiveChanges } from '../components';
import { Link, setQuery, useLocation } from '../router';

interface LogEvent {
  readonly eve_MAC: string;
  readonly eve_IP: string;
  readonly eve_DateTime: string;
  readonly eve_EventType: string;
  readonly eve_AdditionalInfo: string;
  readonly devName: string | null;
}

/** `datetime-local` text (local time) as ISO 8601 UTC, or undefined. */
function toIso(local: string): string | undefined {
  if (!local) return undefined;
  const date = new Date(local);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString().slice(0, 19) + 'Z';
}

export function EventsPage() {
  const { search } = useLocation();
  const types = (search.get('type') ?? '').split(',').filter((t) => eventTypes.includes(t));
  const since = search.get('since') ?? '';
  const until = search.get('until') ?? '';
  const offset = Number(search.get('offset')) || 0;
  const update = (changes: { type?: string[]; since?: string; until?: string; offset?: number }) => {
    const next = { type: types, since, until, offset: 0, ...changes };
    setQuery({
      type: next.type.join(','),
      since: next.since,
      until: next.until,
      offset: next.offset || undefined,
    });
  };

  const params = new URLSearchParams({ limit: '50', offset: String(offset) });
  if (types.length > 0) params.set('type', types.join(','));
  const sinceIso = toIso(since);
  const untilIso = toIso(until);
  if (sinceIso) params.set('since', sinceIso);
  if (untilIso) params.set('until', untilIso);
  const log = useGet<{ events: LogEvent[]; total: number; offset: number; limit: number }>(
    `/history/events?${params.toString()}`,
  );
  useLiveChanges(() => {
    log.reload();
  });

  return (
    <>
      <div class="page-head">
        <h1>Events</h1>
        {log.loading && <Busy label="Loading" />}
      </div>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
        }}
      >
        <fieldset class="types">
          <legend>Types (none checked: all)</legend>
          {eventTypes.map((t) => (
            <label key={t} class="chip">
              <input
                type="checkbox"
                checked={types.includes(t)}
                onChange={(e) => {
                  update({ type: e.currentTarget.checked ? [...types, t] : types.filter((x) => x !== t) });
                }}
              />
              {t}
            </label>
          ))}
        </fieldset>
        <div class="field">
          <label for="events-since">From</label>
          <input
            id="events-since"
            type="datetime-local"
            value={since}
            onChange={(e) => {
              update({ since: e.currentTarget.value });
            }}
          />
        </div>
        <div class="field">
          <label for="events-until">Until</label>
          <input
            id="events-until"
            type="datetime-local"
            value={until}
            onChange={(e) => {
              update({ until: e.currentTarget.value });
            }}
          />
        </div>
      </form>
      <ErrorNote error={log.error} />
      <div class="table-wrap">
        <table class="stack">
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Event</th>
              <th scope="col">Device</th>
              <th scope="col">IP</th>
              <th scope="col" class="wide">
                Details
              </th>
            </tr>
          </thead>
          <tbody>
            {log.data?.events.map((e, i) => (
              <tr key={`${e.eve_DateTime}-${e.eve_MAC}-${i}`}>
                <td>
                  <Time value={e.eve_DateTime} />
                </td>
                <td>
                  <EventType type={e.eve_EventType} />
                </td>
                <td>
                  {e.devName === null ? (
                    <span class="mono muted">{e.eve_MAC} (deleted)</span>
                  ) : (
                    <Link href={`/devices/${e.eve_MAC}`}>{e.devName || e.eve_MAC}</Link>
                  )}
                </td>
                <td class="mono">{e.eve_IP}</td>
                <td class="wide details">{e.eve_AdditionalInfo}</td>
              </tr>
            ))}
            {log.data?.events.length === 0 && <EmptyRow columns={5}>No events match.</EmptyRow>}
          </tbody>
        </table>
      </div>
      <Pager
        page={log.data}
        noun="events"
        onOffset={(o) => {
          update({ offset: o });
        }}
      />
    </>
  );
}

/** Notifications: what was sent (or is waiting, failed, skipped), and "send a test". */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { Busy, Card, EmptyRow, ErrorNote, Pager, Time, useAction, useGet } from '../components';
import { setQuery, useLocation } from '../router';

interface Notification {
  readonly id: number;
  readonly channel: string;
  readonly status: string;
  readonly attempts: number;
  readonly createdAt: string;
  readonly sentAt: string | null;
  readonly lastError: string | null;
  /** Events in all; `events` holds the first 20. */
  readonly eventCount: number;
  readonly events: readonly { type?: string; mac?: string; device?: { devName?: string } }[];
}

interface TestResult {
  readonly channel: string;
  readonly ok: boolean;
  readonly error: string | null;
}

const statuses = ['pending', 'sent', 'failed', 'skipped'];

export function NotificationsPage() {
  const { search } = useLocation();
  const status = search.get('status') ?? '';
  const offset = Number(search.get('offset')) || 0;
  const params = new URLSearchParams({ limit: '50', offset: String(offset) });
  if (status) params.set('status', status);
  const list = useGet<{ notifications: Notification[]; total: number; offset: number; limit: number }>(
    `/notifications?${params.toString()}`,
  );
  const test = useAction();
  const [results, setResults] = useState<TestResult[]>();
  const missing = list.errorStatus === 404;
  return (
    <>
      <div class="page-head">
        <h1>Notifications</h1>
        {list.loading && <Busy label="Loading" />}
      </div>
      <Card title="Send a test" id="notify-test">
        <p class="muted">Sends one test notification to every configured channel now.</p>
        <div class="action-row">
          <button
            type="button"
            disabled={test.running}
            onClick={() =>
              void test.run(async () => {
                setResults(undefined);
                const r = await api<{ results: TestResult[] }>('POST', '/notifications/test');
                setResults(r.results);
              })
            }
          >
            Send a test
          </button>
          {test.running && <Busy label="Sending…" />}
        </div>
        {results && (
          <ul class="results" aria-label="Test results">
            {results.map((r) => (
              <li key={r.channel}>
                <span class={`badge ${r.ok ? 'ok' : 'bad'}`}>{r.ok ? 'delivered' : 'failed'}</span>{' '}
                {r.channel}
                {r.error && <span class="muted"> — {r.error}</span>}
              </li>
            ))}
          </ul>
        )}
        <ErrorNote error={test.error} />
      </Card>
      <Card title="Deliveries" id="notify-list">
        {missing ? (
          <p class="note">
            This netkeep version does not keep notifications yet (GET /notifications answers 404).
          </p>
        ) : (
          <>
            <div class="field inline">
              <label for="notify-status">Status</label>
              <select
                id="notify-status"
                value={status}
                onChange={(e) => {
                  setQuery({ status: e.currentTarget.value });
                }}
              >
                <option value="">any</option>
                {statuses.map((s) => (
                  <option key={s} value={s}>
                    {s}
                  </option>
                ))}
              </select>
            </div>
            <ErrorNote error={list.error} />
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Created</th>
                    <th scope="col">Channel</th>
                    <th scope="col">Status</th>
                    <th scope="col" class="wide">
                      Attempts
                    </th>
                    <th scope="col">Events</th>
                    <th scope="col" class="wide">
                      Last error
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {list.data?.notifications.map((n) => (
                    <tr key={n.id}>
                      <td>
                        <Time value={n.createdAt} />
                      </td>
                      <td>{n.channel}</td>
                      <td>
                        <span
                          class={`badge ${n.status === 'sent' ? 'ok' : n.status === 'failed' ? 'bad' : 'off'}`}
                        >
                          {n.status}
                        </span>
                      </td>
                      <td class="wide">{n.attempts}</td>
                      <td>
                        {n.events
                          .slice(0, 3)
                          .map((e) => `${e.type ?? '?'}: ${e.device?.devName || e.mac || '?'}`)
                          .join(', ')}
                        {n.eventCount > 3 && ` +${n.eventCount - 3} more`}
                      </td>
                      <td class="wide">{n.lastError}</td>
                    </tr>
                  ))}
                  {list.data?.notifications.length === 0 && (
                    <EmptyRow columns={6}>No notifications{status ? ` with status ${status}` : ''}.</EmptyRow>
                  )}
                </tbody>
              </table>
            </div>
            <Pager
              page={list.data}
              noun="notifications"
              onOffset={(o) => {
                setQuery({ status, offset: o });
              }}
            />
          </>
        )}
      </Card>
    </>
  );
}

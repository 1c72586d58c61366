/**
 * One device: its details as a form (every editable field of the server's catalogue, with a label
 * and one Save), the presence timeline of its sessions over a chosen period, its events, and the
 * actions (Wake-on-LAN, a port scan with live output, reset, copy, delete).
 */
import { periods } from 'netkeep:catalogue';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, streamed } from '../api';
import {
  Busy,
  Card,
  ErrorNote,
  LiveOutput,
  Pager,
  Confirmed,
  EmptyRow,
  EventType,
  StatusBadge,
  TextField,
  Time,
  formatTime,
  useAction,
  useGet,
  useLiveChanges,
} from '../components';
import { editable, FieldGroups, fromInput, toInput } from '../fields';
import { Link, navigate } from '../router';
import { NmapModeSelect, finalLines, outputLines, progressLine } from './tools';
import { RandomMacBadge } from './devices';

type Device = Record<string, unknown> & {
  devMac: string;
  devName: string;
  devStatus: string;
  devLastIP: string;
  devSessions: number;
  devEvents: number;
  devDownAlerts: number;
  devPresenceHours: number;
  devSleeping?: number;
  devFlapping?: number;
  devPrimaryIPv6?: string;
  devRandomMac?: number;
  devMacs?: string[];
};

interface Session {
  readonly ses_IP: string;
  readonly ses_DateTimeConnection: string | null;
  readonly ses_DateTimeDisconnection: string | null;
  readonly ses_StillConnected: number;
}

interface DeviceEvent {
  readonly eve_DateTime: string;
  readonly eve_EventType: string;
  readonly eve_IP: string;
  readonly eve_AdditionalInfo: string;
}

/**
 * Whether a MAC is random ("private"): the locally administered bit (0x2 of the first octet), the
 * rule of the server's devRandomMac, applied here to the aliases, which carry no flag of their own.
 */
function isRandomMac(mac: string): boolean {
  return '2367abef'.includes(mac.charAt(1).toLowerCase());
}

/** Where a name came from (devNameSource), as the page says it. */
const nameSources: Readonly<Record<string, string>> = {
  user: 'given by a person',
  import: 'imported',
  dhcp: 'from the DHCP lease',
  mdns: 'from mDNS',
  netbios: 'from NetBIOS',
  dns: 'from reverse DNS',
};

interface ResolvedName {
  readonly name: string;
  readonly source: string;
  readonly candidates: readonly { source: string; name: string }[];
}

function DeviceForm({ device, onSaved }: { readonly device: Device; readonly onSaved: () => void }) {
  const initial = useMemo(
    () => Object.fromEntries(editable.map((f) => [f.name, toInput(f, device[f.name])])),
    [device],
  );
  const [values, setValues] = useState(initial);
  const [saved, setSaved] = useState(false);
  const save = useAction();
  useEffect(() => {
    setValues(initial);
  }, [initial]);
  const changed = editable.filter((f) => values[f.name] !== initial[f.name]);

  const submit = async (event: Event) => {
    event.preventDefault();
    setSaved(false);
    const ok = await save.run(async () => {
      const body = Object.fromEntries(changed.map((f) => [f.name, fromInput(f, values[f.name] ?? '')]));
      await api('POST', `/device/${device.devMac}`, { body });
    });
    if (ok) {
      setSaved(true);
      onSaved();
    }
  };
  return (
    <form class="device-form" onSubmit={(e) => void submit(e)} aria-label="Device details">
      <FieldGroups
        values={values}
        onChange={(name, v) => {
          setSaved(false);
          setValues((old) => ({ ...old, [name]: v }));
        }}
      />
      <div class="form-actions sticky">
        <button type="submit" class="primary" disabled={save.running || changed.length === 0}>
          {save.running ? 'Saving…' : 'Save'}
        </button>
        <button
          type="button"
          disabled={changed.length === 0}
          onClick={() => {
            setValues(initial);
          }}
        >
          Undo changes
        </button>
        <span role="status" class="muted">
          {saved
            ? 'Saved.'
            : changed.length > 0
              ? `${changed.length} unsaved change${changed.length > 1 ? 's' : ''}`
              : ''}
        </span>
        <ErrorNote error={save.error} />
      </div>
    </form>
  );
}

const periodDays: Readonly<Record<string, number>> = {
  '1 day': 1,
  '7 days': 7,
  '1 month': 30,
  '1 year': 365,
};

function Timeline({ mac, period }: { readonly mac: string; readonly period: string }) {
  const sessions = useGet<{ sessions: Session[]; total: number }>(
    `/device/${mac}/sessions?period=${encodeURIComponent(period)}&limit=1000`,
  );
  const now = Date.now();
  const days = periodDays[period] ?? 7;
  const start = now - days * 86_400_000;
  const span = now - start;
  const bars = (sessions.data?.sessions ?? []).flatMap((s) => {
    const from = Math.max(start, s.ses_DateTimeConnection ? Date.parse(s.ses_DateTimeConnection) : start);
    const open = s.ses_StillConnected === 1 || s.ses_DateTimeDisconnection === null;
    const end = s.ses_DateTimeDisconnection;
    const to = open || end === null ? now : Math.min(now, Date.parse(end));
    if (!(to > from)) return [];
    return [
      {
        left: ((from - start) / span) * 100,
        width: Math.max(0.3, ((to - from) / span) * 100),
        s,
        open,
        from,
        to,
      },
    ];
  });
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => new Date(start + f * span));
  return (
    <div class="timeline-wrap">
      <ErrorNote error={sessions.error} />
      <div
        class="timeline"
        role="img"
        aria-label={`${sessions.data?.total ?? 0} sessions in the last ${period}`}
      >
        {bars.map((b, i) => (
          <span
            key={i}
            class={`bar${b.open ? ' open' : ''}`}
            style={{ left: `${b.left}%`, width: `${b.width}%` }}
            title={`${formatTime(new Date(b.from))} – ${b.open ? 'now' : formatTime(new Date(b.to))} (${b.s.ses_IP})`}
          />
        ))}
      </div>
      <div class="ticks" aria-hidden="true">
        {ticks.map((t, i) => (
          <span key={i}>{days <= 1 ? formatTime(t).slice(11) : formatTime(t).slice(5, 10)}</span>
        ))}
      </div>
      {sessions.data && sessions.data.total > sessions.data.sessions.length && (
        <p class="muted">
          The newest {sessions.data.sessions.length} of {sessions.data.total} sessions are drawn.
        </p>
      )}
    </div>
  );
}

function DeviceEvents({ mac, period }: { readonly mac: string; readonly period: string }) {
  const [offset, setOffset] = useState(0);
  useEffect(() => {
    setOffset(0);
  }, [period]);
  const events = useGet<{ events: DeviceEvent[]; total: number; offset: number; limit: number }>(
    `/device/${mac}/events?period=${encodeURIComponent(period)}&limit=20&offset=${offset}`,
  );
  return (
    <>
      <ErrorNote error={events.error} />
      <div class="table-wrap">
        <table class="stack">
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Event</th>
              <th scope="col">IP</th>
              <th scope="col">Details</th>
            </tr>
          </thead>
          <tbody>
            {events.data?.events.map((e, i) => (
              <tr key={`${e.eve_DateTime}-${i}`}>
                <td>
                  <Time value={e.eve_DateTime} />
                </td>
                <td>
                  <EventType type={e.eve_EventType} />
                </td>
                <td class="mono">{e.eve_IP}</td>
                <td class="details">{e.eve_AdditionalInfo}</td>
              </tr>
            ))}
            {events.data?.events.length === 0 && <EmptyRow columns={4}>No events in this period.</EmptyRow>}
          </tbody>
        </table>
      </div>
      <Pager page={events.data} noun="events" onOffset={setOffset} />
    </>
  );
}

interface OpenPort {
  readonly port: number;
  readonly protocol: string;
  readonly service: string;
  readonly product: string;
  readonly version: string;
  readonly firstSeen: string;
}

/** The port watch's last result for the device (devWatchPorts; docs/security-watch.md). */
function DevicePorts({ mac, watched }: { readonly mac: string; readonly watched: boolean }) {
  const ports = useGet<{ scannedAt: string | null; ports: OpenPort[] }>(`/device/${mac}/ports`);
  useLiveChanges(() => {
    ports.reload();
  });
  const data = ports.data;
  return (
    <>
      <ErrorNote error={ports.error} />
      <p class="muted">
        {data?.scannedAt ? (
          <>
            Last scanned <Time value={data.scannedAt} />
          </>
        ) : watched ? (
          'Not scanned yet: the port watch runs every PORT_WATCH_MINUTES.'
        ) : (
          'Not watched: turn on "Watch open ports" in the details.'
        )}
      </p>
      {data && data.scannedAt !== null && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Port</th>
                <th scope="col">Service</th>
                <th scope="col">Product</th>
                <th scope="col">Open since</th>
              </tr>
            </thead>
            <tbody>
              {data.ports.map((p) => (
                <tr key={`${p.port}/${p.protocol}`}>
                  <td class="mono">
                    {p.port}/{p.protocol}
                  </td>
                  <td>{p.service}</td>
                  <td>{[p.product, p.version].filter((t) => t !== '').join(' ')}</td>
                  <td>
                    <Time value={p.firstSeen} />
                  </td>
                </tr>
              ))}
              {data.ports.length === 0 && <EmptyRow columns={4}>No open ports found.</EmptyRow>}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function Actions({ device, onChanged }: { readonly device: Device; readonly onChanged: () => void }) {
  const mac = device.devMac;
  const action = useAction();
  const [message, setMessage] = useState<string>();
  const [lines, setLines] = useState<string[]>([]);
  const [live, setLive] = useState(false);
  const [mode, setMode] = useState('fast');
  // Never pre-filled (DESIGN 18): the device's address is only the placeholder until "Scan ports".
  const [target, setTarget] = useState('');
  const scanTarget = target.trim() || device.devLastIP;
  const [copyTo, setCopyTo] = useState('');
  const [mergeFrom, setMergeFrom] = useState('');
  const [running, setRunning] = useState<string>();

  const run = async (name: string, work: () => Promise<string | undefined>) => {
    setRunning(name);
    setMessage(undefined);
    await action.run(async () => {
      setMessage(await work());
    });
    setRunning(undefined);
  };

  return (
    <div class="actions">
      <div class="action-row">
        <button
          type="button"
          disabled={action.running}
          title="Ask the DHCP leases, mDNS, NetBIOS and reverse DNS for this device's name now. A name given by a person is kept."
          onClick={() =>
            void run('name', async () => {
              const r = await api<ResolvedName>('POST', `/device/${mac}/resolve-name`);
              onChanged();
              const found = r.candidates.map((c) => `${c.name} (${c.source})`).join(', ');
              return `Name: ${r.name}${r.source ? ` (${nameSources[r.source] ?? r.source})` : ''}. ${
                found ? `Sources answered: ${found}.` : 'No source answered.'
              }`;
            })
          }
        >
          Resolve name
        </button>
        {running === 'name' && <Busy label="Asking…" />}
      </div>
      <div class="action-row">
        <button
          type="button"
          disabled={action.running}
          onClick={() =>
            void run('wol', async () => {
              const r = await api<{ message: string; output: string }>('POST', '/nettools/wakeonlan', {
                body: { devMac: mac },
              });
              return `${r.message}: ${r.output}`;
            })
          }
        >
          Wake-on-LAN
        </button>
        {running === 'wol' && <Busy label="Sending…" />}
      </div>
      <form
        class="action-row"
        onSubmit={(e) => {
          e.preventDefault();
          setLines([]);
          setLive(false);
          setTarget(scanTarget);
          void run('nmap', async () => {
            const r = await streamed<{ output: string[] }>(
              'POST',
              '/nettools/nmap',
              (p) => {
                const line = progressLine(p);
                if (line === undefined) return;
                setLive(true);
                setLines((old) => [...old, line]);
              },
              { body: { scan: scanTarget, mode } },
            );
            setLines((old) => finalLines(old, outputLines(r.output)));
            return 'Port scan finished.';
          });
        }}
      >
        <TextField
          id="nmap-target"
          label="Port scan target"
          value={target}
          onValue={setTarget}
          placeholder={device.devLastIP || 'address or range'}
        />
        <NmapModeSelect id="nmap-mode" value={mode} onChange={setMode} />
        <button type="submit" disabled={action.running || scanTarget === ''}>
          Scan ports
        </button>
        {running === 'nmap' && <Busy label="Scanning…" />}
      </form>
      <LiveOutput lines={lines} label="Port scan output" live={live} />
      <form
        class="action-row"
        onSubmit={(e) => {
          e.preventDefault();
          void run('copy', async () => {
            const r = await api<{ message: string }>('POST', '/device/copy', {
              body: { macFrom: mac, macTo: copyTo },
            });
            return r.message;
          });
        }}
      >
        <TextField
          id="copy-to"
          label="Copy details to MAC"
          placeholder="aa:bb:cc:dd:ee:ff"
          value={copyTo}
          onValue={setCopyTo}
        />
        <button type="submit" disabled={action.running || copyTo === ''}>
          Copy
        </button>
      </form>
      <form
        class="action-row"
        onSubmit={(e) => {
          e.preventDefault();
          void run('merge', async () => {
            const r = await api<{ devMacs: string[] }>('POST', `/device/${mac}/merge`, {
              body: { from: mergeFrom },
            });
            setMergeFrom('');
            onChanged();
            return `Merged: this device now has the MACs ${r.devMacs.join(', ')}.`;
          });
        }}
      >
        <TextField
          id="merge-from"
          label="Merge with… (the other device's MAC: its MACs, history and empty fields move here, it is removed)"
          placeholder="aa:bb:cc:dd:ee:ff"
          value={mergeFrom}
          onValue={setMergeFrom}
        />
        <button type="submit" disabled={action.running || mergeFrom === ''}>
          Merge into this device
        </button>
      </form>
      {(device.devMacs ?? []).slice(1).map((alias) => (
        <div class="action-row" key={alias}>
          <Confirmed
            label={`Split off ${alias}…`}
            question={`Make ${alias} a device of its own again (with no history)?`}
            confirm="Yes, split"
            disabled={action.running}
            onConfirm={() => {
              void run('split', async () => {
                await api('POST', `/device/${mac}/split`, { body: { mac: alias } });
                onChanged();
                return `${alias} is a device of its own again.`;
              });
            }}
          />
        </div>
      ))}
      <div class="action-row">
        <Confirmed
          label="Reset custom properties…"
          question="Reset its custom properties to none?"
          confirm="Yes, reset"
          disabled={action.running}
          onConfirm={() => {
            void run('reset', async () => {
              await api('POST', `/device/${mac}/reset-props`);
              onChanged();
              return 'Custom properties reset.';
            });
          }}
        />
        <Confirmed
          label="Delete history…"
          question="Delete all its events and sessions?"
          confirm="Yes, delete history"
          disabled={action.running}
          onConfirm={() => {
            void run('events', async () => {
              await api('DELETE', `/device/${mac}/events/delete`);
              onChanged();
              return 'Events and sessions deleted.';
            });
          }}
        />
        <Confirmed
          label="Delete device…"
          question={`Delete ${device.devName || mac} and its history?`}
          confirm="Yes, delete"
          disabled={action.running}
          onConfirm={() => {
            void run('delete', async () => {
              await api('DELETE', `/device/${mac}/delete`);
              navigate('/');
              return undefined;
            });
          }}
        />
      </div>
      {message && (
        <p class="note ok" role="status">
          {message}
        </p>
      )}
      <ErrorNote error={action.error} />
    </div>
  );
}

export function DevicePage({ mac }: { readonly mac: string }) {
  const [period, setPeriod] = useState('7 days');
  const device = useGet<Device>(`/device/${encodeURIComponent(mac)}?period=${encodeURIComponent(period)}`);
  useLiveChanges(() => {
    device.reload();
  });
  const d = device.data;
  const timelinePeriods = periods.filter((p) => p in periodDays);
  return (
    <>
      <p class="crumbs">
        <Link href="/">Devices</Link> / <span class="mono">{mac}</span>
      </p>
      <ErrorNote error={device.error} />
      {!d && device.loading && <Busy label="Loading device…" />}
      {d && (
        <>
          <div class="page-head">
            <h1>{d.devName || '(no name)'}</h1>
            <StatusBadge status={d.devStatus} />
            {d.devSleeping === 1 && (
              <span class="badge sleeping" title="Unseen, but within its sleep window: still present">
                Sleeping
              </span>
            )}
            {d.devFlapping === 1 && (
              <span class="badge flapping" title="Comes and goes: its notifications are held back">
                Flapping
              </span>
            )}
          </div>
          <p class="muted summary">
            <span class="mono">{d.devMac}</span>
            {d.devRandomMac === 1 && <RandomMacBadge />}
            {(d.devMacs ?? []).length > 1 && (
              <span class="aliases">
                {' · also '}
                {(d.devMacs ?? []).slice(1).map((alias, i) => (
                  <span key={alias} class="alias">
                    {i > 0 && ', '}
                    <span class="mono">{alias}</span>
                    {isRandomMac(alias) && <RandomMacBadge />}
                  </span>
                ))}
              </span>
            )}
            {typeof d.devNameSource === 'string' && d.devNameSource !== '' && (
              <span class="name-source"> · name {nameSources[d.devNameSource] ?? d.devNameSource}</span>
            )}
            {d.devLastIP && (
              <>
                {' · '}
                <span class="mono">{d.devLastIP}</span>
              </>
            )}
            {d.devPrimaryIPv6 && (
              <>
                {' · '}
                <span class="mono" title="IPv6 address">
                  {d.devPrimaryIPv6}
                </span>
              </>
            )}
            {typeof d.devVendor === 'string' && d.devVendor && ` · ${d.devVendor}`}
            {typeof d.devSite === 'string' && d.devSite && (
              <span class="site">
                {' · site '}
                <Link href={`/?site=${encodeURIComponent(d.devSite)}`}>{d.devSite}</Link>
                {typeof d.devSyncHubNode === 'string' && d.devSyncHubNode && (
                  <span title="The probe that saw it last"> (probe {d.devSyncHubNode})</span>
                )}
              </span>
            )}
            {' · last seen '}
            <Time value={d.devLastConnection as string | null} />
          </p>
          <div class="columns">
            <div>
              <Card title="Presence" id="presence">
                <div class="field inline">
                  <label for="period">Period</label>
                  <select
                    id="period"
                    value={period}
                    onChange={(e) => {
                      setPeriod(e.currentTarget.value);
                    }}
                  >
                    {timelinePeriods.map((p) => (
                      <option key={p} value={p}>
                        last {p}
                      </option>
                    ))}
                  </select>
                </div>
                <dl class="stats">
                  <div>
                    <dt>Hours connected</dt>
                    <dd>{d.devPresenceHours}</dd>
                  </div>
                  <div>
                    <dt>Sessions</dt>
                    <dd>{d.devSessions}</dd>
                  </div>
                  <div>
                    <dt title="Events other than Connected and Disconnected">Other events</dt>
                    <dd>{d.devEvents}</dd>
                  </div>
                  <div>
                    <dt>Down alerts</dt>
                    <dd>{d.devDownAlerts}</dd>
                  </div>
                </dl>
                <Timeline mac={d.devMac} period={period} />
              </Card>
              <Card title="Actions" id="actions">
                <Actions device={d} onChanged={device.reload} />
              </Card>
              <Card title={`Events, last ${period}`} id="events">
                <DeviceEvents mac={d.devMac} period={period} />
              </Card>
              <Card title="Open ports" id="ports">
                <DevicePorts mac={d.devMac} watched={d.devWatchPorts === 1} />
              </Card>
            </div>
            <Card title="Details" id="details">
              <DeviceForm device={d} onSaved={device.reload} />
            </Card>
          </div>
        </>
      )}
    </>
  );
}

/**
 * Probes (DESIGN 16): the netkeep servers on other networks that report to this hub. The list
 * (GET /probes), "Add probe" (POST /probes: its token is in that answer only, so the page shows it
 * once, with the lines that start the probe) and revoke (DELETE /probes/<id>, after a question).
 */
import { useState } from 'preact/hooks';
import { api } from '../api';
import {
  Busy,
  Card,
  Confirmed,
  EmptyRow,
  ErrorNote,
  Time,
  useAction,
  useGet,
  useLiveChanges,
} from '../components';

interface Probe {
  readonly id: string;
  readonly name: string;
  readonly site: string;
  readonly subnets: readonly string[];
  readonly createdAt: string;
  readonly lastCycleAt: string | null;
  readonly status: 'online' | 'offline' | 'never';
  readonly spooledCycles: number;
  readonly droppedCycles: number;
}

const statusTone: Record<Probe['status'], string> = { online: 'ok', offline: 'bad', never: 'off' };
const statusLabel: Record<Probe['status'], string> = {
  online: 'online',
  offline: 'offline',
  never: 'never reported',
};

/** The token of the probe just added: in this answer only (the hub keeps a hash). */
interface Added {
  readonly name: string;
  readonly site: string;
  readonly token: string;
}

function AddedProbe({ added, onDone }: { readonly added: Added; readonly onDone: () => void }) {
  const hub = window.location.origin;
  const npmLine = `PROBE_HUB_URL=${hub} PROBE_TOKEN=${added.token} SCAN_SUBNETS=<cidr>@<interface> npm start`;
  const envLines = `PROBE_HUB_URL=${hub}\nPROBE_TOKEN=${added.token}\nSCAN_SUBNETS=<cidr>@<interface>`;
  return (
    <div class="note ok added-probe" role="status" aria-label={`Probe ${added.name} added`}>
      <p>
        <strong>Probe “{added.name}” added</strong> (site {added.site}). Its token is shown this once: netkeep
        keeps only a hash of it. Copy it now.
      </p>
      <label for="probe-token">Probe token</label>
      <input
        id="probe-token"
        class="mono"
        readOnly
        value={added.token}
        onFocus={(e) => {
          e.currentTarget.select();
        }}
      />
      <p>On the probe's machine, in netkeep's directory:</p>
      <pre class="output start-line" aria-label="Start with npm" tabIndex={0}>
        {npmLine}
      </pre>
      <p>
        or with Docker Compose: these lines in the <code>.env</code> beside netkeep's{' '}
        <code>docker-compose.yml</code>, then <code>docker compose up -d</code> (docs/probes.md):
      </p>
      <pre class="output start-line" aria-label="Start with Docker Compose" tabIndex={0}>
        {envLines}
      </pre>
      <div class="action-row">
        <button type="button" onClick={onDone}>
          Done, I copied it
        </button>
      </div>
    </div>
  );
}

export function ProbesPage() {
  const loaded = useGet<{ probes: readonly Probe[] }>('/probes');
  // A probe's cycle that changes devices or events reaches the stream: the rows follow it (a cycle
  // that changes nothing shows at the next reload).
  useLiveChanges(() => {
    loaded.reload();
  });
  const [name, setName] = useState('');
  const [site, setSite] = useState('');
  const [added, setAdded] = useState<Added>();
  const adding = useAction();
  const removing = useAction();

  const add = async (event: Event) => {
    event.preventDefault();
    const body = { name: name.trim(), site: site.trim() };
    const ok = await adding.run(async () => {
      const answer = await api<{ id: string; token: string }>('POST', '/probes', { body });
      setAdded({ ...body, token: answer.token });
    });
    if (ok) {
      setName('');
      setSite('');
      loaded.reload();
    }
  };
  const revoke = async (probe: Probe) => {
    if (await removing.run(() => api('DELETE', `/probes/${probe.id}`))) loaded.reload();
  };

  const probes = loaded.data?.probes ?? [];
  return (
    <>
      <div class="page-head">
        <h1>Probes</h1>
        {loaded.loading && <Busy label="Loading…" />}
      </div>
      <p class="muted">
        A probe is a netkeep on another network (another site, a VLAN this server is not on) that scans it and
        sends each cycle here. Its devices carry the probe's site.
      </p>
      <Card title="Add probe" id="add-probe">
        {added ? (
          <AddedProbe
            added={added}
            onDone={() => {
              setAdded(undefined);
            }}
          />
        ) : (
          <form class="filters" onSubmit={(e) => void add(e)}>
            <div class="field">
              <label for="probe-name">Name</label>
              <input
                id="probe-name"
                required
                maxLength={64}
                placeholder="office"
                value={name}
                onInput={(e) => {
                  setName(e.currentTarget.value);
                }}
              />
            </div>
            <div class="field">
              <label for="probe-site">Site</label>
              <input
                id="probe-site"
                required
                maxLength={64}
                placeholder="Office"
                value={site}
                onInput={(e) => {
                  setSite(e.currentTarget.value);
                }}
              />
            </div>
            <div class="field">
              <button type="submit" class="primary" disabled={adding.running}>
                {adding.running ? 'Adding…' : 'Add probe'}
              </button>
            </div>
          </form>
        )}
        <ErrorNote error={adding.error} />
      </Card>
      <ErrorNote error={loaded.errorStatus === 404 ? 'This server does not offer probes.' : loaded.error} />
      <ErrorNote error={removing.error} />
      <div class="table-wrap">
        <table class="stack probes">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Site</th>
              <th scope="col">Status</th>
              <th scope="col">Subnets</th>
              <th scope="col">Last cycle</th>
              <th scope="col">Spooled</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {probes.map((p) => (
              <tr key={p.id} data-probe={p.name}>
                <td data-label="Name">
                  <strong>{p.name}</strong>
                </td>
                <td data-label="Site">{p.site}</td>
                <td data-label="Status">
                  <span class={`badge ${statusTone[p.status]}`}>{statusLabel[p.status]}</span>
                </td>
                <td data-label="Subnets" class="mono">
                  {p.subnets.length === 0 ? <span class="muted">none yet</span> : p.subnets.join(', ')}
                </td>
                <td data-label="Last cycle">
                  <Time value={p.lastCycleAt} />
                </td>
                <td data-label="Spooled">
                  {p.spooledCycles.toLocaleString()}
                  {p.droppedCycles > 0 && (
                    <span class="tag flapping" title="Cycles the probe's spool dropped (PROBE_SPOOL_MAX)">
                      {p.droppedCycles.toLocaleString()} dropped
                    </span>
                  )}
                </td>
                <td>
                  <Confirmed
                    label="Revoke"
                    question={`Revoke probe ${p.name}? Its token stops working at once; its devices stay.`}
                    confirm="Yes, revoke"
                    disabled={removing.running}
                    onConfirm={() => void revoke(p)}
                  />
                </td>
              </tr>
            ))}
            {loaded.data && probes.length === 0 && (
              <EmptyRow columns={7}>No probes yet: this server sees only its own network.</EmptyRow>
            )}
          </tbody>
        </table>
      </div>
    </>
  );
}

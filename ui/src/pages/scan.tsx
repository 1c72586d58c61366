/** Presence scanning: the last cycle's summary and "scan now" (with live progress where streamed). */
import { useState } from 'preact/hooks';
import { streamed } from '../api';
import { Busy, Card, ErrorNote, LiveOutput, Time, useAction, useGet, useLiveChanges } from '../components';
import { progressLine } from './tools';

interface ScanSummary {
  readonly enabled?: boolean;
  readonly running: boolean;
  readonly lastCycle: {
    readonly startedAt: string;
    readonly finishedAt: string;
    readonly durationMs: number;
    readonly devicesSeen: number;
    readonly newDevices: number;
    readonly errors: readonly string[];
  } | null;
}

export function ScanPage() {
  const status = useGet<ScanSummary>('/nettools/scan');
  const action = useAction();
  const [lines, setLines] = useState<string[]>([]);
  useLiveChanges((event) => {
    if (event === 'scan' || event === 'reset') status.reload();
  });
  const cycle = status.data?.lastCycle;
  const scanNow = () => {
    setLines([]);
    void action.run(async () => {
      await streamed('POST', '/nettools/scan', (p) => {
        const line = progressLine(p);
        if (line !== undefined) setLines((old) => [...old, line]);
      });
      status.reload();
    });
  };
  return (
    <>
      <div class="page-head">
        <h1>Scan</h1>
      </div>
      <Card title="Presence scanning" id="scan-status">
        <ErrorNote error={status.error} />
        {status.data?.enabled === false && (
          <p class="note">
            Presence scanning is off: set SCAN_SUBNETS (e.g. <code>192.168.1.0/24@eth0</code>) and restart
            netkeep.
          </p>
        )}
        {status.data?.enabled !== false && status.data && (
          <p>
            {status.data.running ? (
              <Busy label="A scan cycle is running." />
            ) : (
              'No scan cycle is running now.'
            )}
          </p>
        )}
        {cycle ? (
          <dl class="stats">
            <div>
              <dt>Last cycle started</dt>
              <dd>
                <Time value={cycle.startedAt} />
              </dd>
            </div>
            <div>
              <dt>Took</dt>
              <dd>{(cycle.durationMs / 1000).toFixed(1)} s</dd>
            </div>
            <div>
              <dt>Devices seen</dt>
              <dd>{cycle.devicesSeen}</dd>
            </div>
            <div>
              <dt>New devices</dt>
              <dd>{cycle.newDevices}</dd>
            </div>
          </dl>
        ) : (
          status.data && <p class="muted">No scan cycle has run since the server started.</p>
        )}
        {cycle && cycle.errors.length > 0 && (
          <div class="note error" role="alert">
            <p>The last cycle reported problems:</p>
            <ul>
              {cycle.errors.map((e) => (
                <li key={e}>{e}</li>
              ))}
            </ul>
          </div>
        )}
        <div class="action-row">
          <button
            type="button"
            class="primary"
            disabled={action.running || status.data?.running || status.data?.enabled === false}
            onClick={scanNow}
          >
            Scan now
          </button>
          {action.running && <Busy label="Scanning…" />}
        </div>
        <LiveOutput lines={lines} label="Scan progress" />
        <ErrorNote error={action.error} />
      </Card>
    </>
  );
}

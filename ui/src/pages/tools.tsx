/**
 * The network tools: traceroute, nslookup, speed test and nmap with live output where the server
 * streams it, internet info and Wake-on-LAN. Each runs on its own; a running tool says so.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, streamed } from '../api';
import { Busy, Card, ErrorNote, LiveOutput, TextField, useAction } from '../components';

const nmapModes = [
  { value: 'fast', label: 'Fast (100 common ports)' },
  { value: 'normal', label: 'Normal (1,000 ports)' },
  { value: 'detail', label: 'Detailed (versions, OS)' },
  { value: 'skipdiscovery', label: 'Skip host discovery' },
] as const;

/** The nmap mode chooser, labelled. */
export function NmapModeSelect(props: {
  readonly id: string;
  readonly value: string;
  readonly onChange: (mode: string) => void;
}) {
  return (
    <div class="field">
      <label for={props.id}>Mode</label>
      <select
        id={props.id}
        value={props.value}
        onChange={(e) => {
          props.onChange(e.currentTarget.value);
        }}
      >
        {nmapModes.map((m) => (
          <option key={m.value} value={m.value}>
            {m.label}
          </option>
        ))}
      </select>
    </div>
  );
}

/** The text of one progress message: an output line, a speed-test phase or a scan step. */
export function progressLine(data: Record<string, unknown>): string | undefined {
  if (typeof data.line === 'string') return data.line;
  if (typeof data.phase === 'string')
    return `${data.phase}: ${typeof data.mbps === 'number' ? `${data.mbps.toFixed(1)} Mbit/s` : '…'}`;
  if (typeof data.subnet === 'string')
    return `${data.subnet}: ${typeof data.devicesSeen === 'number' ? data.devicesSeen : '?'} devices seen`;
  return undefined;
}

/**
 * What to show once a command has finished: its final output, after the live lines when those
 * said something else (a speed test's phases), or the live lines alone when they were the output.
 * Blank lines do not count: nmap prints one the final output leaves out, and the output must not
 * be shown twice for it.
 */
export function finalLines(live: readonly string[], final: readonly string[]): string[] {
  if (live.length === 0) return [...final];
  const text = (lines: readonly string[]) =>
    lines
      .map((l) => l.trimEnd())
      .filter((l) => l !== '')
      .join('\n');
  return text(live) === text(final) ? [...live] : [...live, '', ...final];
}

/** A tool's `output` (a string or an array of lines) as lines. */
export function outputLines(output: unknown): string[] {
  if (Array.isArray(output)) return output.map(String);
  if (typeof output === 'string') return output.split('\n');
  return [];
}

function Tool(props: {
  readonly title: string;
  readonly id: string;
  readonly description: string;
  readonly button: string;
  readonly runningLabel: string;
  readonly children?: ComponentChildren;
  readonly disabled?: boolean;
  /** Runs the tool; `line` appends live output; resolves with the final lines. */
  readonly run: (line: (text: string) => void) => Promise<string[]>;
}) {
  const action = useAction();
  const [lines, setLines] = useState<string[]>([]);
  const [live, setLive] = useState(false);
  return (
    <Card title={props.title} id={props.id}>
      <p class="muted">{props.description}</p>
      <form
        class="action-row"
        onSubmit={(e) => {
          e.preventDefault();
          setLines([]);
          setLive(false);
          void action.run(async () => {
            const final = await props.run((text) => {
              setLive(true);
              setLines((old) => [...old, text]);
            });
            setLines((old) => finalLines(old, final));
          });
        }}
      >
        {props.children}
        <button type="submit" disabled={action.running || props.disabled}>
          {props.button}
        </button>
        {action.running && <Busy label={props.runningLabel} />}
      </form>
      <LiveOutput lines={lines} label={`${props.title} output`} live={live} />
      <ErrorNote error={action.error} />
    </Card>
  );
}

export function ToolsPage() {
  const [traceTarget, setTraceTarget] = useState('');
  const [lookup, setLookup] = useState('');
  const [scan, setScan] = useState('');
  const [mode, setMode] = useState('fast');
  const [wake, setWake] = useState('');
  const onProgress = (line: (text: string) => void) => (data: Record<string, unknown>) => {
    const text = progressLine(data);
    if (text !== undefined) line(text);
  };
  return (
    <>
      <div class="page-head">
        <h1>Tools</h1>
      </div>
      <div class="tool-grid">
        <Tool
          title="Traceroute"
          id="tool-traceroute"
          description="The route to an IP address, hop by hop."
          button="Trace"
          runningLabel="Tracing…"
          disabled={traceTarget === ''}
          run={async (line) => {
            const r = await streamed<{ output: string }>('POST', '/nettools/traceroute', onProgress(line), {
              body: { devLastIP: traceTarget.trim() },
            });
            return outputLines(r.output);
          }}
        >
          <TextField id="trace-ip" label="IP address" value={traceTarget} onValue={setTraceTarget} />
        </Tool>
        <Tool
          title="DNS lookup"
          id="tool-nslookup"
          description="nslookup of a host name or an IP address."
          button="Look up"
          runningLabel="Looking up…"
          disabled={lookup === ''}
          run={async () => {
            const r = await api<{ output: string[] }>('POST', '/nettools/nslookup', {
              body: { devLastIP: lookup.trim() },
            });
            return outputLines(r.output);
          }}
        >
          <TextField id="lookup-name" label="Host name or IP address" value={lookup} onValue={setLookup} />
        </Tool>
        <Tool
          title="Port scan"
          id="tool-nmap"
          description="nmap of an address or a range (CIDR)."
          button="Scan"
          runningLabel="Scanning…"
          disabled={scan === ''}
          run={async (line) => {
            const r = await streamed<{ output: string[] }>('POST', '/nettools/nmap', onProgress(line), {
              body: { scan: scan.trim(), mode },
            });
            return outputLines(r.output);
          }}
        >
          <TextField id="nmap-scan" label="Address or range" value={scan} onValue={setScan} />
          <NmapModeSelect id="nmap-mode-tool" value={mode} onChange={setMode} />
        </Tool>
        <Tool
          title="Speed test"
          id="tool-speedtest"
          description="Latency, download and upload speed of the internet connection."
          button="Run speed test"
          runningLabel="Measuring…"
          run={async (line) => {
            const r = await streamed<{ output: string[] }>('GET', '/nettools/speedtest', onProgress(line));
            return outputLines(r.output);
          }}
        />
        <Tool
          title="Internet info"
          id="tool-internetinfo"
          description="The public IP address, city, country and provider."
          button="Ask"
          runningLabel="Asking…"
          run={async () => {
            const r = await api<{ output: string }>('GET', '/nettools/internetinfo');
            return outputLines(r.output);
          }}
        />
        <Tool
          title="Wake-on-LAN"
          id="tool-wol"
          description="Sends the magic packet to wake a device."
          button="Wake"
          runningLabel="Sending…"
          disabled={wake === ''}
          run={async () => {
            const r = await api<{ message: string; output: string }>('POST', '/nettools/wakeonlan', {
              body: { devMac: wake.trim() },
            });
            return [r.message, r.output];
          }}
        >
          <TextField
            id="wol-mac"
            label="MAC address"
            placeholder="aa:bb:cc:dd:ee:ff"
            value={wake}
            onValue={setWake}
          />
        </Tool>
      </div>
    </>
  );
}

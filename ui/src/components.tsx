/**
 * Pieces every page uses: loading and error states, paging, times, status badges, live updates,
 * labelled text fields.
 */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure, describe, get } from './api';

export interface Loaded<T> {
  readonly data: T | undefined;
  readonly error: string | undefined;
  /** HTTP status of the failure (404: the server does not offer this), 0 when unreachable. */
  readonly errorStatus: number | undefined;
  readonly loading: boolean;
  /** Loads again (keeps showing the previous data meanwhile). */
  readonly reload: () => void;
}

/** Loads `path` (when not undefined) and again whenever it changes; a newer load cancels an older. */
export function useGet<T>(path: string | undefined): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: string; errorStatus?: number; loading: boolean }>({
    loading: true,
  });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (path === undefined) return;
    const abort = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    get<T>(path, abort.signal).then(
      (data) => {
        setState({ data, loading: false });
      },
      (err: unknown) => {
        if ((err as Error).name === 'AbortError') return;
        const errorStatus = err instanceof ApiFailure ? err.status : undefined;
        setState((s) => ({ ...s, error: describe(err), errorStatus, loading: false }));
      },
    );
    return () => {
      abort.abort();
    };
  }, [path, tick]);
  const reload = useCallback(() => {
    setTick((t) => t + 1);
  }, []);
  return {
    data: state.data,
    error: state.error,
    errorStatus: state.errorStatus,
    loading: state.loading,
    reload,
  };
}

/** Runs one action at a time, remembering whether it runs and how it failed. */
export function useAction(): {
  running: boolean;
  error: string | undefined;
  run: (action: () => Promise<unknown>) => Promise<boolean>;
  clear: () => void;
} {
  const [running, setRunning] = useState(false);
  const [error, setError] = useState<string>();
  const run = useCallback(async (action: () => Promise<unknown>) => {
    setRunning(true);
    setError(undefined);
    try {
      await action();
      return true;
    } catch (err) {
      setError(describe(err));
      return false;
    } finally {
      setRunning(false);
    }
  }, []);
  return {
    running,
    error,
    run,
    clear: () => {
      setError(undefined);
    },
  };
}

export function ErrorNote({ error }: { readonly error: string | undefined }) {
  if (!error) return null;
  return (
    <p class="note error" role="alert">
      {error}
    </p>
  );
}

export function Busy({ label }: { readonly label: string }) {
  return (
    <span class="busy" role="status">
      <span class="spinner" aria-hidden="true" />
      {label}
    </span>
  );
}

/** Previous/Next for a list page `{offset, limit, total}`; nothing until the page has loaded. */
export function Pager(props: {
  readonly page: { readonly offset: number; readonly limit: number; readonly total: number } | undefined;
  readonly onOffset: (offset: number) => void;
  readonly noun: string;
}) {
  const { page, onOffset, noun } = props;
  if (page === undefined) return null;
  const { offset, limit, total } = page;
  const last = Math.min(offset + limit, total);
  return (
    <nav class="pager" aria-label={`${noun} pages`}>
      <span aria-live="polite">
        {total === 0
          ? `No ${noun}`
          : `${(offset + 1).toLocaleString()}–${last.toLocaleString()} of ${total.toLocaleString()} ${noun}`}
      </span>
      <button
        type="button"
        disabled={offset === 0}
        onClick={() => {
          onOffset(Math.max(0, offset - limit));
        }}
      >
        Previous
      </button>
      <button
        type="button"
        disabled={last >= total}
        onClick={() => {
          onOffset(offset + limit);
        }}
      >
        Next
      </button>
    </nav>
  );
}

/** The one row of an empty table, spanning its columns. */
export function EmptyRow(props: { readonly columns: number; readonly children: ComponentChildren }) {
  return (
    <tr>
      <td colSpan={props.columns} class="empty">
        {props.children}
      </td>
    </tr>
  );
}

/** An event type, coloured by what it means. */
export function EventType({ type }: { readonly type: string }) {
  return <span class={`event-type t-${type.replace(/\s+/g, '-').toLowerCase()}`}>{type}</span>;
}

/** `2026-01-31 18:02` in the browser's zone, with the exact UTC time as a tooltip. */
export function Time({ value }: { readonly value: string | null | undefined }) {
  if (!value) return <span class="muted">never</span>;
  const date = new Date(value);
  return (
    <time dateTime={value} title={value}>
      {formatTime(date)}
    </time>
  );
}

export function formatTime(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

export function StatusBadge({ status }: { readonly status: string }) {
  const tone = status === 'On-line' ? 'ok' : status === 'Down' ? 'bad' : 'off';
  return <span class={`badge ${tone}`}>{status}</span>;
}

export function Card(props: {
  readonly title: string;
  readonly children: ComponentChildren;
  readonly id?: string;
}) {
  return (
    <section class="card" aria-labelledby={props.id}>
      <h2 id={props.id}>{props.title}</h2>
      {props.children}
    </section>
  );
}

/** How long a page waits before it asks for a stream again after the server refused one. */
const streamRetryMs = 10_000;

/**
 * Subscribes to `GET /stream` (live changes) and calls `onChange` with each message's event name,
 * at most once a second. `devices-changed` stands for many devices at once (an import) and `reset`
 * for messages the stream could not replay: a page reloads what it shows for either. An
 * `EventSource` retries a dropped connection by itself, but not a refused one (503 when
 * `MAX_STREAMS` streams are open, or 404 from a server without the stream): the page asks again
 * every 10 s, and reloads what it shows (as for `reset`) once a new stream is open.
 */
export function useLiveChanges(onChange: (event: string) => void): void {
  const callback = useRef(onChange);
  callback.current = onChange;
  useEffect(() => {
    if (typeof EventSource === 'undefined') return;
    let source: EventSource | undefined;
    let retry: number | undefined;
    let timer: number | undefined;
    let pending = '';
    const fire = (event: string) => {
      pending = event;
      if (timer !== undefined) return;
      timer = window.setTimeout(() => {
        timer = undefined;
        callback.current(pending);
      }, 1000);
    };
    const open = (again: boolean) => {
      const current = new EventSource('/stream');
      source = current;
      for (const name of ['device', 'devices-changed', 'device-event', 'scan', 'reset'])
        current.addEventListener(name, () => {
          fire(name);
        });
      // What changed while the page had no stream is unknown: as after a `reset`.
      if (again)
        current.addEventListener('open', () => {
          fire('reset');
        });
      current.addEventListener('error', () => {
        if (current.readyState === EventSource.CLOSED)
          retry = window.setTimeout(() => {
            open(true);
          }, streamRetryMs);
      });
    };
    open(false);
    return () => {
      source?.close();
      if (retry !== undefined) clearTimeout(retry);
      if (timer !== undefined) clearTimeout(timer);
    };
  }, []);
}

/**
 * Output lines of a running command, announced politely to screen readers. `live` marks output
 * that arrived while the command ran (data-live, which the browser tests read).
 */
export function LiveOutput(props: {
  readonly lines: readonly string[];
  readonly label: string;
  readonly live?: boolean;
}) {
  const { lines, label, live } = props;
  const ref = useRef<HTMLPreElement>(null);
  useEffect(() => {
    const el = ref.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [lines.length]);
  if (lines.length === 0) return null;
  return (
    <pre
      class="output"
      ref={ref}
      aria-label={label}
      aria-live="polite"
      tabIndex={0}
      data-live={live ? 'true' : undefined}
    >
      {lines.join('\n')}
    </pre>
  );
}

/** A labelled one-line text input (addresses, MACs, names: monospaced), updated as the user types. */
export function TextField(props: {
  readonly id: string;
  readonly label: string;
  readonly value: string;
  readonly onValue: (value: string) => void;
  readonly placeholder?: string;
}) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id}
        class="mono"
        placeholder={props.placeholder}
        value={props.value}
        onInput={(e) => {
          props.onValue(e.currentTarget.value);
        }}
      />
    </div>
  );
}

/** A destructive action: the first press asks, the second (or Cancel) answers. */
export function Confirmed(props: {
  readonly label: string;
  readonly question: string;
  readonly confirm: string;
  readonly disabled: boolean;
  readonly onConfirm: () => void;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking)
    return (
      <button
        type="button"
        class="danger"
        disabled={props.disabled}
        onClick={() => {
          setAsking(true);
        }}
      >
        {props.label}
      </button>
    );
  return (
    <span class="confirm" role="group" aria-label={props.question}>
      <span>{props.question}</span>
      <button
        type="button"
        class="danger"
        autoFocus
        onClick={() => {
          setAsking(false);
          props.onConfirm();
        }}
      >
        {props.confirm}
      </button>
      <button
        type="button"
        onClick={() => {
          setAsking(false);
        }}
      >
        Cancel
      </button>
    </span>
  );
}

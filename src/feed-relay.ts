/**
 * The change feed across the servers of one database (PostgreSQL): what this server
 * publishes on its feed (API writes, applied and finished scan cycles) goes to the other servers,
 * and the relay's own feed carries this server's changes and theirs, so that every server's
 * /stream shows every server's changes. The local feed stays this server's own: its metrics and
 * MQTT count and publish what it did (summed over the servers, nothing is counted twice). The
 * caches do not depend on this: they follow the store's change tracking.
 *
 * A message must stay under PostgreSQL's payload limit: a large cycle's events are sent in parts,
 * in order. A message that still does not fit is not relayed (logged): the other servers' caches
 * are told by the store anyway, only their streams miss that detail.
 */
import type { Logger } from 'pino';
import { ChangeFeed, type ChangeEvents, type ScanEventRecord } from './events.js';
import type { ServerLink } from './store/servers.js';

const relayed = ['device', 'devices', 'scan-applied', 'scan-finished'] as const;
type RelayedKind = (typeof relayed)[number];

/** Bytes of JSON a relayed feed event may take (notify.ts sends up to 7800 with its envelope). */
const maxBytes = 7000;

interface FeedMessage {
  readonly feed: RelayedKind;
  readonly payload: unknown;
}

function isFeedMessage(body: unknown): body is FeedMessage {
  if (typeof body !== 'object' || body === null) return false;
  const { feed, payload } = body as { feed?: unknown; payload?: unknown };
  return (relayed as readonly unknown[]).includes(feed) && typeof payload === 'object' && payload !== null;
}

/** A scan-applied message in parts that each fit (a part of one element is sent whatever its size). */
function scanAppliedParts(payload: ChangeEvents['scan-applied']): ChangeEvents['scan-applied'][] {
  if (Buffer.byteLength(JSON.stringify(payload)) <= maxBytes) return [payload];
  const { events, presence } = payload;
  if (events.length + presence.length <= 1) return [payload];
  const half = (list: readonly unknown[]): number => Math.ceil(list.length / 2);
  // Events first, then presence: a part never mixes halves out of order.
  const first =
    events.length > 1
      ? { events: events.slice(0, half(events)), presence: [] }
      : { events, presence: presence.slice(0, half(presence)) };
  const rest =
    events.length > 1
      ? { events: events.slice(half(events)), presence }
      : { events: [], presence: presence.slice(half(presence)) };
  return [...scanAppliedParts(first), ...scanAppliedParts(rest)];
}

/** A relayed scan-applied payload with its event times as Date values again (JSON made them text). */
function revived(payload: ChangeEvents['scan-applied']): ChangeEvents['scan-applied'] {
  return {
    presence: payload.presence,
    events: payload.events.map((event): ScanEventRecord => ({
      ...event,
      time: new Date(event.time as unknown as string),
    })),
  };
}

export interface FeedRelay {
  /** This server's changes and the other servers', as they come (what /stream shows). */
  readonly feed: ChangeFeed;
  stop(): void;
}

/** Sends what `local` publishes to the other servers, and merges theirs with it in `feed`. */
export function relayFeed(
  local: ChangeFeed,
  link: ServerLink,
  logger: Pick<Logger, 'warn' | 'error'>,
): FeedRelay {
  const merged = new ChangeFeed(logger);
  const send = (kind: RelayedKind, payload: unknown): void => {
    const body: FeedMessage = { feed: kind, payload };
    if (Buffer.byteLength(JSON.stringify(body)) > maxBytes + 100) {
      logger.warn(
        { event: 'feed-relay-too-large', kind },
        'a change too large to relay to the other servers',
      );
      return;
    }
    link.send(body).catch((err: unknown) => {
      logger.warn(
        { event: 'feed-relay-failed', kind, err: err instanceof Error ? err.message : String(err) },
        'a change could not be relayed to the other servers',
      );
    });
  };
  const stops = [
    local.subscribe('device', (payload) => {
      merged.publish('device', payload);
      send('device', payload);
    }),
    local.subscribe('devices', (payload) => {
      merged.publish('devices', payload);
      send('devices', payload);
    }),
    local.subscribe('scan-applied', (payload) => {
      merged.publish('scan-applied', payload);
      for (const part of scanAppliedParts(payload)) send('scan-applied', part);
    }),
    local.subscribe('scan-finished', (payload) => {
      merged.publish('scan-finished', payload);
      send('scan-finished', payload);
    }),
    link.onMessage((body) => {
      if (!isFeedMessage(body)) return;
      // The sender published these from its own typed feed; only scan-applied's times need reviving.
      if (body.feed === 'scan-applied')
        merged.publish('scan-applied', revived(body.payload as ChangeEvents['scan-applied']));
      else merged.publish(body.feed, body.payload as ChangeEvents[typeof body.feed]);
    }),
  ];
  return {
    feed: merged,
    stop: () => {
      for (const stop of stops) stop();
    },
  };
}

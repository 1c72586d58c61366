/**
 * A device's history as the list endpoints return it: one object per Events or Sessions row, with
 * the table's own column names (NetAlertX users know them; the tables are NetAlertX's) and times as
 * ISO 8601 with Z. The column lists, the row -> JSON conversion and the response schemas live
 * together here so they cannot drift apart.
 */
import { Type, type Static } from '@sinclair/typebox';
import { fromDbTime } from '../time.js';

/** The event types the scanner writes (imported data may hold other text; it is listed as stored). */
export const eventTypes = [
  'New Device',
  'Connected',
  'Disconnected',
  'Device Down',
  'Down Reconnected',
  'IP Changed',
  'Flapping',
  // The security watch's (docs/security-watch.md): notified whatever the device's alert flags.
  'IP Conflict',
  'Gateway Changed',
  'Ports Changed',
  'Rogue DHCP',
  'MAC Linked',
] as const;
export type EventType = (typeof eventTypes)[number];

export const eventColumns = [
  'eve_MAC',
  'eve_IP',
  'eve_DateTime',
  'eve_EventType',
  'eve_AdditionalInfo',
  'eve_PendingAlertEmail',
] as const;

export const sessionColumns = [
  'ses_MAC',
  'ses_IP',
  'ses_EventTypeConnection',
  'ses_DateTimeConnection',
  'ses_EventTypeDisconnection',
  'ses_DateTimeDisconnection',
  'ses_StillConnected',
  'ses_AdditionalInfo',
] as const;

const time = (description: string) => Type.String({ format: 'date-time', description });
const optionalTime = (description: string) =>
  Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description });

export const EventSchema = Type.Object(
  {
    eve_MAC: Type.String({ description: 'MAC of the device (canonical form).' }),
    eve_IP: Type.String({ description: 'IP address at the time of the event.' }),
    eve_DateTime: time('When it happened (UTC).'),
    eve_EventType: Type.String({
      description: `${eventTypes.join(', ')} (other text from imported data is returned as stored).`,
    }),
    eve_AdditionalInfo: Type.String({
      description:
        'IP Changed: the previous IP address; Flapping: how many changes in which window; IP Conflict, Gateway Changed, Ports Changed, Rogue DHCP: what was seen (docs/security-watch.md).',
    }),
    eve_PendingAlertEmail: Type.Integer({ description: '1 while an alert for this event is pending.' }),
  },
  { $id: 'DeviceEvent', additionalProperties: false },
);
export type EventJson = Static<typeof EventSchema>;

export const SessionSchema = Type.Object(
  {
    ses_MAC: Type.String({ description: 'MAC of the device (canonical form).' }),
    ses_IP: Type.String({ description: 'IP address during the session.' }),
    ses_EventTypeConnection: Type.String({ description: 'Event that opened it (e.g. Connected).' }),
    ses_DateTimeConnection: optionalTime('When it started (UTC); null when not recorded.'),
    ses_EventTypeDisconnection: Type.String({ description: 'Event that closed it; "" while open.' }),
    ses_DateTimeDisconnection: optionalTime('When it ended (UTC); null while open.'),
    ses_StillConnected: Type.Integer({ description: '1 while the session is open.' }),
    ses_AdditionalInfo: Type.String(),
  },
  { $id: 'DeviceSession', additionalProperties: false },
);
export type SessionJson = Static<typeof SessionSchema>;

/** An Events row as selected with `eventColumns`. */
export interface EventRow {
  eve_MAC: string;
  eve_IP: string;
  eve_DateTime: string;
  eve_EventType: string;
  eve_AdditionalInfo: string;
  eve_PendingAlertEmail: number;
}

/** A Sessions row as selected with `sessionColumns`. */
export interface SessionRow {
  ses_MAC: string;
  ses_IP: string;
  ses_EventTypeConnection: string;
  ses_DateTimeConnection: string | null;
  ses_EventTypeDisconnection: string;
  ses_DateTimeDisconnection: string | null;
  ses_StillConnected: number;
  ses_AdditionalInfo: string;
}

export function eventToJson(row: EventRow): EventJson {
  return { ...row, eve_DateTime: fromDbTime(row.eve_DateTime) };
}

export function sessionToJson(row: SessionRow): SessionJson {
  const at = (value: string | null): string | null => (value === null ? null : fromDbTime(value));
  return {
    ...row,
    ses_DateTimeConnection: at(row.ses_DateTimeConnection),
    ses_DateTimeDisconnection: at(row.ses_DateTimeDisconnection),
  };
}

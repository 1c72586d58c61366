/**
 * The event log across every device (the console's events page): events newest first, narrowed by
 * type and time, paged, each with the name of its device. SQLite: sqlite/event-log.ts.
 */
import type { EventJson, EventType } from '../devices/history.js';
import type { Page, PageResult } from './devices.js';

export interface EventLogFilter {
  /** Only these types (none or empty: every type, imported oddities included). */
  readonly types?: readonly EventType[];
  /** Events at or after it (whole seconds count). */
  readonly since?: Date;
  /** Events at or before it. */
  readonly until?: Date;
}

/** An event of the log: the event and its device's name (null once the device is deleted). */
export type EventLogItem = EventJson & { devName: string | null };

export interface EventLogStore {
  list(filter: EventLogFilter, page: Page): Promise<PageResult<EventLogItem>>;
}

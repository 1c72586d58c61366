/**
 * The human text of a delivery, for the channels that show text to a person (ntfy, Apprise): a
 * title, one line per event (at most 20, then "+N more"), and what kind of news it is.
 */
import type { Delivery, NotificationEvent } from './model.js';

/** Lines shown before "+N more". */
export const maxLines = 20;

/** 'New Device: Kitchen speaker (aa:bb:cc:dd:ee:ff) 10.0.0.5'. */
export function eventLine(event: NotificationEvent): string {
  const name = event.device.devName && event.device.devName !== '(unknown)' ? `${event.device.devName} ` : '';
  const vendor = name === '' && event.device.devVendor ? `${event.device.devVendor} ` : '';
  const info = event.additionalInfo ? ` (${event.additionalInfo})` : '';
  return `${event.type}: ${name}${vendor}(${event.mac}) ${event.ip}${info}`.trimEnd();
}

/** The body text: one line per event, "+N more" past 20. */
export function messageBody(delivery: Delivery): string {
  if (delivery.test) return `Test notification from netkeep (delivery ${delivery.deliveryId}).`;
  const lines = delivery.events.slice(0, maxLines).map(eventLine);
  const more = delivery.events.length - maxLines;
  if (more > 0) lines.push(`+${more} more`);
  return lines.join('\n');
}

/** ASCII only (it travels in an HTTP header for ntfy): device names stay in the body. */
export function messageTitle(delivery: Delivery): string {
  if (delivery.test) return 'netkeep: test notification';
  const [first] = delivery.events;
  if (delivery.events.length === 1 && first) return `netkeep: ${first.type}`;
  const types = new Set(delivery.events.map((e) => e.type));
  return `netkeep: ${delivery.events.length} network events (${[...types].join(', ')})`;
}

export function hasType(delivery: Delivery, type: NotificationEvent['type']): boolean {
  return delivery.events.some((e) => e.type === type);
}

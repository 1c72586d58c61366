/**
 * ntfy channel: POST of plain text to the topic URL, with `Title`, `Priority` (high when a Device
 * Down or a security watch event is among the events) and `Tags` headers; NOTIFY_NTFY_TOKEN as `Authorization: Bearer`.
 */
import type { Channel, Delivery } from '../model.js';
import { hasType, messageBody, messageTitle } from '../message.js';
import { securityEventTypes } from '../rules.js';
import { httpTarget, postHttp } from './http.js';

/** ntfy shows tags that name an emoji as that emoji. */
export function ntfyTags(delivery: Delivery): string {
  if (delivery.test) return 'netkeep,white_check_mark';
  const tags = ['netkeep'];
  if (hasType(delivery, 'Device Down')) tags.push('rotating_light');
  if (hasType(delivery, 'New Device')) tags.push('new');
  if (security(delivery)) tags.push('warning');
  return tags.join(',');
}

function security(delivery: Delivery): boolean {
  return securityEventTypes.some((type) => hasType(delivery, type));
}

export function ntfyChannel(url: string, token: string): Channel {
  const target = httpTarget(url);
  return {
    name: 'ntfy',
    async send(delivery, signal) {
      const headers: Record<string, string> = {
        'content-type': 'text/plain; charset=utf-8',
        title: messageTitle(delivery),
        priority: hasType(delivery, 'Device Down') || security(delivery) ? 'high' : 'default',
        tags: ntfyTags(delivery),
        'x-netkeep-delivery': delivery.deliveryId,
      };
      if (token !== '') headers.authorization = `Bearer ${token}`;
      await postHttp(target, headers, messageBody(delivery), signal);
    },
  };
}

/**
 * ntfy channel: POST of plain text to the topic URL, with `Title`, `Priority` (high when a Device
 * Down is among the events) and `Tags` headers; NOTIFY_NTFY_TOKEN as `Authorization: Bearer`.
 */
import type { Channel, Delivery } from '../model.js';
import { hasType, messageBody, messageTitle } from '../message.js';
import { httpTarget, postHttp } from './http.js';

/** ntfy shows tags that name an emoji as that emoji. */
export function ntfyTags(delivery: Delivery): string {
  if (delivery.test) return 'netkeep,white_check_mark';
  const tags = ['netkeep'];
  if (hasType(delivery, 'Device Down')) tags.push('rotating_light');
  if (hasType(delivery, 'New Device')) tags.push('new');
  return tags.join(',');
}

export function ntfyChannel(url: string, token: string): Channel {
  const target = httpTarget(url);
  return {
    name: 'ntfy',
    async send(delivery, signal) {
      const headers: Record<string, string> = {
        'content-type': 'text/plain; charset=utf-8',
        title: messageTitle(delivery),
        priority: hasType(delivery, 'Device Down') ? 'high' : 'default',
        tags: ntfyTags(delivery),
        'x-netkeep-delivery': delivery.deliveryId,
      };
      if (token !== '') headers.authorization = `Bearer ${token}`;
      await postHttp(target, headers, messageBody(delivery), signal);
    },
  };
}

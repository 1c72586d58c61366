/**
 * Webhook channel: POST of the delivery as JSON. With NOTIFY_WEBHOOK_SECRET, the header
 * `X-Netkeep-Signature: sha256=<hex>` is the HMAC-SHA256 of the exact body bytes sent, so a
 * receiver verifies the bytes it got before parsing them.
 */
import { createHmac } from 'node:crypto';
import type { Channel, Delivery } from '../model.js';
import { httpTarget, postHttp } from './http.js';

export function webhookBody(delivery: Delivery): string {
  return JSON.stringify({
    deliveryId: delivery.deliveryId,
    source: 'netkeep',
    sentAt: delivery.sentAt,
    ...(delivery.test ? { test: true } : {}),
    events: delivery.events,
  });
}

export function signature(secret: string, body: Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export function webhookChannel(url: string, secret: string): Channel {
  const target = httpTarget(url);
  return {
    name: 'webhook',
    async send(delivery, signal) {
      const body = webhookBody(delivery);
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'x-netkeep-delivery': delivery.deliveryId,
      };
      if (secret !== '') headers['x-netkeep-signature'] = signature(secret, Buffer.from(body, 'utf8'));
      await postHttp(target, headers, body, signal);
    },
  };
}

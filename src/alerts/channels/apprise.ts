/**
 * Apprise API channel: POST of `{"title", "body", "type"}` to the notify URL. The type is
 * `failure` with a Device Down or a security watch event, `warning` with a New Device or a Flapping, `success` when every event is a
 * reconnection (Connected, Down Reconnected), else `info`.
 */
import type { Channel, Delivery } from '../model.js';
import { hasType, messageBody, messageTitle } from '../message.js';
import { securityEventTypes } from '../rules.js';
import { httpTarget, postHttp } from './http.js';

export type AppriseType = 'failure' | 'warning' | 'success' | 'info';

export function appriseType(delivery: Delivery): AppriseType {
  if (hasType(delivery, 'Device Down') || securityEventTypes.some((t) => hasType(delivery, t)))
    return 'failure';
  if (hasType(delivery, 'New Device') || hasType(delivery, 'Flapping')) return 'warning';
  const reconnection = (type: string): boolean => type === 'Connected' || type === 'Down Reconnected';
  if (delivery.events.length > 0 && delivery.events.every((e) => reconnection(e.type))) return 'success';
  return 'info';
}

export function appriseChannel(url: string): Channel {
  const target = httpTarget(url);
  return {
    name: 'apprise',
    async send(delivery, signal) {
      const body = JSON.stringify({
        title: messageTitle(delivery),
        body: messageBody(delivery),
        type: appriseType(delivery),
      });
      await postHttp(
        target,
        { 'content-type': 'application/json', 'x-netkeep-delivery': delivery.deliveryId },
        body,
        signal,
      );
    },
  };
}

/** The security watch's events in the channels' wording: urgent in ntfy and Apprise. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { appriseType } from '../../src/alerts/channels/apprise.js';
import { ntfyTags } from '../../src/alerts/channels/ntfy.js';
import type { Delivery, NotificationEvent } from '../../src/alerts/model.js';
import { securityEventTypes } from '../../src/alerts/rules.js';

function delivery(type: NotificationEvent['type']): Delivery {
  return {
    deliveryId: '00000000-0000-4000-8000-000000000000',
    sentAt: '2026-01-01T00:00:00Z',
    events: [
      {
        type,
        time: '2026-01-01T00:00:00Z',
        mac: '02:00:00:00:00:01',
        ip: '10.0.0.1',
        additionalInfo: '',
        device: {
          devName: '',
          devOwner: '',
          devType: '',
          devVendor: '',
          devLastIP: '',
          devRandomMac: 0,
          devStatus: 'On-line',
        },
      },
    ],
  };
}

test('every security watch event is a failure for Apprise and a warning for ntfy', () => {
  assert.equal(securityEventTypes.length, 4);
  for (const type of securityEventTypes) {
    assert.equal(appriseType(delivery(type)), 'failure', type);
    assert.equal(ntfyTags(delivery(type)), 'netkeep,warning', type);
  }
  assert.equal(appriseType(delivery('IP Changed')), 'info');
  assert.equal(ntfyTags(delivery('IP Changed')), 'netkeep');
});

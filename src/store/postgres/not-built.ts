/**
 * The parts of the PostgreSQL store that are not built yet, as stand-ins whose every
 * method rejects with STORE_NOT_BUILT naming the method, so that a server on PostgreSQL runs and
 * says plainly what it cannot do yet, instead of failing at start. Each is replaced in store.ts by
 * the real part as it lands; this file goes when the last one has.
 */
import { DomainError } from '../../errors.js';
import type { BackupStore } from '../backup.js';
import type { CompatStore } from '../compat.js';
import type { ProbeStore } from '../probes.js';
import type { DeviceReadouts } from '../readouts.js';
import type { DeviceListPart, DeviceViewPart } from './store.js';

/** An object with `methods`, each rejecting with STORE_NOT_BUILT. */
function notBuilt<T>(part: string, methods: readonly (keyof T & string)[]): T {
  const stand = Object.fromEntries(
    methods.map((method) => [
      method,
      () =>
        Promise.reject(
          new DomainError(
            'unavailable',
            `${part}.${method} is not built on PostgreSQL yet (docs/postgresql.md).`,
            {
              code: 'STORE_NOT_BUILT',
              reason: 'Not built on PostgreSQL',
            },
          ),
        ),
    ]),
  );
  return stand as T;
}

export const notBuiltDeviceViews = (): DeviceViewPart =>
  notBuilt<DeviceViewPart>('devices', ['get', 'getTimed', 'stats', 'totals', 'counts']);
export const notBuiltDeviceLists = (): DeviceListPart =>
  notBuilt<DeviceListPart>('devices', [
    'listDevices',
    'listOrder',
    'listItems',
    'searchTexts',
    'bulkEdit',
    'merge',
    'split',
  ]);
export const notBuiltCompat = (): CompatStore =>
  notBuilt<CompatStore>('compat', [
    'byStatusAfter',
    'devicesAfter',
    'eventsAfter',
    'sessionTotals',
    'importDevices',
  ]);
export const notBuiltReadouts = (): DeviceReadouts =>
  notBuilt<DeviceReadouts>('readouts', ['summaries', 'trackedDevices', 'trackedDevice', 'statusRows']);
export const notBuiltBackup = (): BackupStore => notBuilt<BackupStore>('backup', ['snapshot']);
export const notBuiltProbes = (): ProbeStore =>
  notBuilt<ProbeStore>('probes', [
    'create',
    'list',
    'get',
    'tokenHash',
    'delete',
    'hasCycle',
    'setStatus',
    'pruneCycles',
  ]);

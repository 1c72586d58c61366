/**
 * The /device/ routes (NetAlertX's device API). Each handler validates (schema + path MAC), calls the
 * repository, and maps its answer to a status; every rule lives in input.ts or the repository.
 * Each write method of the store answers once the write is durable (writes that arrive together
 * share one commit).
 */
import { Type } from '@sinclair/typebox';
import type { ChangeFeed } from '../events.js';
import type { App } from '../http/app.js';
import { DomainError } from '../errors.js';
import {
  commonErrors,
  ErrorRef,
  optionalBody,
  SuccessMessageSchema,
  SuccessSchema,
} from '../http/schemas.js';
import { macPattern } from '../validation.js';
import {
  BulkChangesSchema,
  defaultDeviceJson,
  DeviceChildSchema,
  DeviceSchema,
  DeviceWriteSchema,
} from './catalogue.js';
import { columnWrite, deviceWrite } from './input.js';
import { deviceMac, MacParams, notFound, parsePeriod, pathMac, PeriodQuery, requireMac } from './params.js';
import { DeviceJsonCache } from './view-cache.js';
import type { DeviceStore } from '../store/devices.js';
import { deviceStatus } from './status.js';

const tags = ['devices'];

const CopyBody = Type.Object(
  {
    macFrom: Type.String({
      maxLength: 64,
      pattern: macPattern,
      description: 'MAC of the device to copy from (must exist).',
    }),
    macTo: Type.String({
      maxLength: 64,
      pattern: macPattern,
      description: 'MAC of the device to create or replace.',
    }),
  },
  { additionalProperties: false },
);

const UpdateColumnBody = Type.Object(
  {
    columnName: Type.String({
      maxLength: 64,
      description: 'An editable device field (see docs/api/devices.md).',
    }),
    columnValue: Type.Unknown({
      description: 'A value valid for that field\'s type; 0, false, "" and null allowed.',
    }),
  },
  { additionalProperties: false },
);

const ResetPropsBody = Type.Object(
  {},
  { additionalProperties: true, description: 'Optional; its fields are ignored.' },
);

const macField = (description: string) => Type.String({ maxLength: 64, pattern: macPattern, description });

const MergeBody = Type.Object(
  { from: macField('The device to move into this one (its own MAC; it must not be an alias already).') },
  { additionalProperties: false },
);

const SplitBody = Type.Object(
  { mac: macField('The alias to make a device of its own again (with no history).') },
  { additionalProperties: false },
);

const MacsAnswer = Type.Object(
  {
    success: Type.Literal(true),
    devMac: Type.String({ description: 'The device the MACs belong to.' }),
    devMacs: Type.Array(Type.String(), { description: 'Every MAC of the device, its own first.' }),
  },
  { additionalProperties: false },
);

/** Most devices one bulk edit names: the console's "select all" of a filtered list. */
export const maxBulkDevices = 10_000;
/**
 * The bulk edit's own body limit, above BODY_LIMIT (64 KiB by default, which holds ~3,000 MACs):
 * room for `maxBulkDevices` MACs at their longest accepted spelling, and the fields.
 */
const bulkBodyLimit = maxBulkDevices * 70 + 64 * 1024;

const BulkBody = Type.Object(
  {
    macs: Type.Array(macField('A device (its own MAC or an alias).'), {
      minItems: 1,
      maxItems: maxBulkDevices,
      description: `The devices to change (at most ${maxBulkDevices}).`,
    }),
    set: Type.Optional({
      ...BulkChangesSchema,
      description:
        'Field values to set on every device (the fields that make sense for many devices at once; the same rules as POST /device/<mac>).',
    }),
    delete: Type.Optional(Type.Literal(true, { description: 'true: delete every device instead.' })),
  },
  { additionalProperties: false },
);

const BulkAnswer = Type.Object(
  {
    success: Type.Literal(true),
    changed: Type.Array(Type.String(), { description: 'The devices changed (their devMac).' }),
    failed: Type.Array(
      Type.Object(
        {
          mac: Type.String(),
          code: Type.String({ description: 'DEVICE_NOT_FOUND (deleted meanwhile) or PARENT_CYCLE.' }),
          message: Type.String(),
        },
        { additionalProperties: false },
      ),
      { description: 'The devices left as they were, and why.' },
    ),
  },
  { additionalProperties: false },
);

const deviceErrors = { ...commonErrors, 404: ErrorRef } as const;

export interface DeviceRoutesOptions {
  /** Where devices are read and written. */
  readonly repository: DeviceStore;
  /** Told about every write the routes commit (`device` {mac, change}). */
  readonly feed?: ChangeFeed;
}

/** The /device/ routes, as an encapsulated Fastify plugin (register it with `app.register`). */
export default async function deviceRoutes(
  app: App,
  { repository, feed }: DeviceRoutesOptions,
): Promise<void> {
  const changed = (mac: string, change: 'created' | 'updated' | 'deleted'): void => {
    feed?.publish('device', { mac, change });
  };
  const cache = new DeviceJsonCache(repository);
  app.addSchema(DeviceChildSchema);
  app.addSchema(DeviceSchema);
  const DeviceRef = Type.Ref('Device');

  // The template never changes: computed fields are those of a device with no history.
  const template = {
    ...defaultDeviceJson(),
    devStatus: deviceStatus(0, 0),
    devSleeping: 0,
    devFlapping: 0,
    devRandomMac: 0,
    devMacs: [],
    devSessions: 0,
    devEvents: 0,
    devDownAlerts: 0,
    devPresenceHours: 0,
    devChildrenDynamic: [],
    devChildrenNicsDynamic: [],
  };

  app.get(
    '/device/new',
    {
      schema: {
        tags,
        summary: 'Template of a new device: catalogue defaults, zero counts, no children.',
        response: { 200: DeviceRef, 403: ErrorRef },
      },
    },
    async () => template,
  );

  app.get(
    '/device/:mac',
    {
      schema: {
        tags,
        summary: 'One device with its computed status, counts for the period, and children.',
        params: MacParams,
        querystring: PeriodQuery,
        response: { 200: DeviceRef, 400: ErrorRef, 403: ErrorRef, 404: ErrorRef },
      },
    },
    async (request, reply) => {
      const given = requireMac(request.params.mac);
      const period = parsePeriod(request.query.period);
      // Served as ready JSON text, exact for the time it is made, by the device's own MAC or an
      // alias (see view-cache.ts).
      const json = await cache.get(given, period);
      if (json === undefined) throw notFound(given);
      return reply.type('application/json; charset=utf-8').send(json);
    },
  );

  app.post(
    '/device/:mac',
    {
      schema: {
        tags,
        summary: 'Create (createNew: true) or partially update a device.',
        params: MacParams,
        body: DeviceWriteSchema,
        response: { 200: SuccessSchema, ...deviceErrors, 409: ErrorRef },
      },
    },
    async (request) => {
      const given = pathMac(request.params.mac);
      const { createNew, changes } = deviceWrite(request.body, given);
      // An alias finds its device (so createNew with an alias is a 409, as for its own MAC).
      if (createNew) {
        const mac = await repository.resolveMac(given);
        if ((await repository.create(mac, changes, new Date())) === 'exists')
          throw new DomainError('conflict', `Device ${mac} already exists.`, { code: 'DEVICE_EXISTS' });
        changed(mac, 'created');
      } else {
        const mac = await repository.updateResolved(given, changes);
        if (mac === undefined) throw notFound(given);
        changed(mac, 'updated');
      }
      return { success: true as const };
    },
  );

  app.post(
    '/devices/bulk',
    {
      bodyLimit: bulkBodyLimit,
      schema: {
        tags,
        summary:
          'Set the same fields on many devices, or delete them, in one transaction; devices that are gone are reported in `failed` and the rest change.',
        body: BulkBody,
        response: { 200: BulkAnswer, ...commonErrors },
      },
    },
    async (request) => {
      const { macs, set, delete: remove } = request.body;
      if ((set === undefined) === (remove === undefined))
        throw new DomainError('invalid', 'Give either `set` (the fields to change) or `delete: true`.', {
          code: 'BULK_EDIT_SHAPE',
        });
      const devices = macs.map((m, i) => requireMac(m, `macs[${String(i)}]`));
      const edit = set === undefined ? ({ delete: true } as const) : { set: deviceWrite(set, '').changes };
      const result = await repository.bulkEdit(devices, edit);
      if (remove === true) for (const mac of result.changed) changed(mac, 'deleted');
      else if (result.changed.length > 0) feed?.publish('devices', { created: [], updated: result.changed });
      return { success: true as const, ...result };
    },
  );

  app.delete(
    '/device/:mac/delete',
    {
      schema: {
        tags,
        summary: "Delete a device with its events and sessions; clears its children's devParentMAC.",
        params: MacParams,
        response: { 200: SuccessSchema, 400: ErrorRef, 403: ErrorRef, 404: ErrorRef },
      },
    },
    async (request) => {
      const mac = await deviceMac(request.params.mac, repository);
      if (!(await repository.delete(mac))) throw notFound(mac);
      changed(mac, 'deleted');
      return { success: true as const };
    },
  );

  app.delete(
    '/device/:mac/events/delete',
    {
      schema: {
        tags,
        summary: 'Delete every event and session of a device (the device stays).',
        params: MacParams,
        response: { 200: SuccessSchema, 400: ErrorRef, 403: ErrorRef, 404: ErrorRef },
      },
    },
    async (request) => {
      const mac = await deviceMac(request.params.mac, repository);
      if (!(await repository.deleteEvents(mac))) throw notFound(mac);
      changed(mac, 'updated');
      return { success: true as const };
    },
  );

  app.post(
    '/device/:mac/reset-props',
    {
      schema: {
        tags,
        summary: 'Reset devCustomProps to its default (an empty array).',
        params: MacParams,
        body: ResetPropsBody,
        response: { 200: SuccessSchema, ...deviceErrors },
      },
      preValidation: optionalBody,
    },
    async (request) => {
      const mac = await deviceMac(request.params.mac, repository);
      if (!(await repository.resetProps(mac))) throw notFound(mac);
      changed(mac, 'updated');
      return { success: true as const };
    },
  );

  app.post(
    '/device/copy',
    {
      schema: {
        tags,
        summary: 'Copy every stored field but the MAC from macFrom to macTo (created or replaced).',
        body: CopyBody,
        response: { 200: SuccessMessageSchema, ...deviceErrors },
      },
    },
    async (request) => {
      const from = await repository.resolveMac(requireMac(request.body.macFrom, 'macFrom'));
      const to = await repository.resolveMac(requireMac(request.body.macTo, 'macTo'));
      if (from === to)
        throw new DomainError('invalid', 'macFrom and macTo are the same device.', { code: 'SAME_DEVICE' });
      if (!(await repository.copy(from, to))) throw notFound(from);
      changed(to, 'updated');
      return { success: true as const, message: `Device copied from ${from} to ${to}` };
    },
  );

  // NetAlertX: api_device_set_alias (server/api_server/api_server_start.py) and
  // SetDeviceAliasRequest (openapi/schemas.py): sets devName. It goes through the same write as
  // POST /device/<mac> {devName}, so it is a user's edit of the name like any other API write.
  app.post(
    '/device/:mac/set-alias',
    {
      schema: {
        tags,
        summary: "Set a device's name (devName), as NetAlertX's set-alias does.",
        params: MacParams,
        body: Type.Object(
          {
            alias: Type.String({ minLength: 1, maxLength: 128, description: 'The new devName.' }),
          },
          { additionalProperties: false },
        ),
        response: { 200: SuccessMessageSchema, ...deviceErrors },
      },
    },
    async (request) => {
      const mac = await deviceMac(request.params.mac, repository);
      const { changes } = deviceWrite({ devName: request.body.alias }, mac);
      if (!(await repository.update(mac, changes))) throw notFound(mac);
      changed(mac, 'updated');
      return { success: true as const, message: `Alias of ${mac} set` };
    },
  );

  app.post(
    '/device/:mac/merge',
    {
      schema: {
        tags,
        summary:
          "Merge device `from` into this one in one transaction: from's MACs become aliases, its events and sessions move, this device's empty fields take from's values, from is gone.",
        params: MacParams,
        body: MergeBody,
        response: { 200: MacsAnswer, ...deviceErrors, 409: ErrorRef },
      },
    },
    async (request) => {
      const to = requireMac(request.params.mac);
      const from = requireMac(request.body.from, 'from');
      // Resolved inside the write: two merges of the same devices cannot interleave.
      const result = await repository.merge(to, from, new Date());
      changed(from, 'deleted');
      changed(result.devMac, 'updated');
      return { success: true as const, devMac: result.devMac, devMacs: result.devMacs };
    },
  );

  app.post(
    '/device/:mac/split',
    {
      schema: {
        tags,
        summary:
          'Make an alias of this device a device of its own again, with no history (the history stays where it was recorded).',
        params: MacParams,
        body: SplitBody,
        response: { 200: MacsAnswer, ...deviceErrors },
      },
    },
    async (request) => {
      const mac = requireMac(request.params.mac);
      const alias = requireMac(request.body.mac, 'mac');
      const result = await repository.split(mac, alias, new Date());
      changed(result.split, 'created');
      changed(result.devMac, 'updated');
      return { success: true as const, devMac: result.devMac, devMacs: result.devMacs };
    },
  );

  app.post(
    '/device/:mac/update-column',
    {
      schema: {
        tags,
        summary: 'Set one editable field of a device.',
        params: MacParams,
        body: UpdateColumnBody,
        response: { 200: SuccessSchema, ...deviceErrors },
      },
    },
    async (request) => {
      const given = requireMac(request.params.mac);
      const { column, value } = columnWrite(request.body.columnName, request.body.columnValue);
      const mac = await repository.updateResolved(given, { [column]: value });
      if (mac === undefined) throw notFound(given);
      changed(mac, 'updated');
      return { success: true as const };
    },
  );
}

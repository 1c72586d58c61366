/**
 * Probe routes. Admin (the API token or a console session, like every route):
 * `POST /probes` `{name, site}` -> `{success, id, token}` (the token shown this once), `GET /probes`,
 * `DELETE /probes/<id>`. Probes: `POST /probes/cycles`, authorised by a probe token only, checked in
 * this plugin's onRequest hook before the body is read (the server-wide check lets this one path
 * through: auth.ts). A probe token is refused everywhere else by the server-wide check (it is not
 * the API token), and the API token is refused here (a cycle belongs to a probe).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { App } from '../http/app.js';
import { ApiError } from '../http/errors.js';
import { commonErrors, ErrorRef, SuccessSchema } from '../http/schemas.js';
import { probeStatuses, type ProbeRecord } from '../store/probes.js';
import { cycleBodyLimit, CycleUploadSchema } from './cycle.js';
import type { ProbeHub } from './hub.js';

export interface ProbeRoutesOptions {
  readonly hub: ProbeHub;
}

const nameText = (what: string) =>
  Type.String({
    minLength: 1,
    maxLength: 64,
    pattern: '^[A-Za-z0-9][A-Za-z0-9 ._-]*$',
    description: `${what}: 1-64 letters, digits, spaces, dots, dashes or underscores.`,
  });

const ProbeSchema = Type.Object(
  {
    id: Type.String({ description: 'UUID.' }),
    name: Type.String(),
    site: Type.String(),
    subnets: Type.Array(Type.String(), { description: "Subnets of the probe's last cycle." }),
    createdAt: Type.String({ format: 'date-time' }),
    lastCycleAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: "When the hub applied the probe's last cycle; null: never.",
    }),
    status: Type.Union(
      probeStatuses.map((s) => Type.Literal(s)),
      {
        description: `online, offline (no cycle for PROBE_OFFLINE_MINUTES) or never (no cycle yet).`,
      },
    ),
    spooledCycles: Type.Integer({ description: "Cycles in the probe's spool, as its last upload said." }),
    droppedCycles: Type.Integer({ description: 'Cycles its spool dropped (PROBE_SPOOL_MAX), in all.' }),
  },
  { additionalProperties: false },
);

const ProbeIdParams = Type.Object(
  {
    id: Type.String({
      pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
      description: "The probe's id (UUID, lowercase, as POST /probes gave it).",
    }),
  },
  { additionalProperties: false },
);

/** The probe each upload request was authorised for (set by the onRequest hook). */
const uploader = new WeakMap<FastifyRequest, ProbeRecord>();

const probeTokenRequired = () =>
  new ApiError(
    403,
    'Forbidden',
    'ERROR: Not authorized: POST /probes/cycles takes a probe token (POST /probes makes one), not the API token.',
    undefined,
    {},
    'PROBE_TOKEN_REQUIRED',
  );

export default async function probeRoutes(app: App, opts: ProbeRoutesOptions): Promise<void> {
  const { hub } = opts;

  app.post(
    '/probes',
    {
      schema: {
        tags: ['probes'],
        summary:
          'Adds a probe (a netkeep on another network that reports to this hub). The token is in this answer only; it is stored hashed.',
        body: Type.Object(
          { name: nameText('Probe name'), site: nameText('Site name') },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object(
            {
              success: Type.Literal(true),
              id: Type.String(),
              token: Type.String({ description: "The probe's PROBE_TOKEN: shown this once." }),
            },
            { additionalProperties: false },
          ),
          ...commonErrors,
          409: ErrorRef,
        },
      },
    },
    async (request) => {
      const { id, token } = await hub.create(request.body.name, request.body.site);
      return { success: true as const, id, token };
    },
  );

  app.get(
    '/probes',
    {
      schema: {
        tags: ['probes'],
        summary: 'Every probe with its site, subnets, last cycle, status and spool.',
        response: {
          200: Type.Object(
            { success: Type.Literal(true), probes: Type.Array(ProbeSchema) },
            { additionalProperties: false },
          ),
          403: ErrorRef,
        },
      },
    },
    async () => ({ success: true as const, probes: await hub.list() }),
  );

  app.delete(
    '/probes/:id',
    {
      schema: {
        tags: ['probes'],
        summary: 'Removes a probe: its token is refused from the next request on. Its devices stay.',
        params: ProbeIdParams,
        response: { 200: SuccessSchema, 400: ErrorRef, 403: ErrorRef, 404: ErrorRef },
      },
    },
    async (request) => {
      await hub.remove(request.params.id);
      return { success: true as const };
    },
  );

  app.post(
    '/probes/cycles',
    {
      bodyLimit: cycleBodyLimit,
      onRequest: async (request) => {
        const match = /^Bearer ([^\s]+)$/i.exec(request.headers.authorization ?? '');
        const probe = match?.[1] === undefined ? undefined : await hub.authenticate(match[1]);
        if (probe === undefined) throw probeTokenRequired();
        uploader.set(request, probe);
      },
      schema: {
        tags: ['probes'],
        summary:
          "A probe's finished scan cycle (probe token only). Applied with the scanner's state machine, scoped to the probe's subnets and site, once per cycleId (a repeat answers 200 and changes nothing), in the probe's order (409 CYCLE_OUT_OF_ORDER).",
        body: CycleUploadSchema,
        response: {
          200: Type.Object(
            {
              success: Type.Literal(true),
              applied: Type.Boolean({
                description: 'False for a repeated cycleId, or a cycle that failed at the probe.',
              }),
              repeated: Type.Boolean(),
              devicesSeen: Type.Integer(),
              newDevices: Type.Integer(),
            },
            { additionalProperties: false },
          ),
          ...commonErrors,
          404: ErrorRef,
          409: ErrorRef,
        },
      },
    },
    async (request) => {
      const probe = uploader.get(request);
      if (probe === undefined) throw probeTokenRequired();
      if (request.body.probeId !== undefined && request.body.probeId.toLowerCase() !== probe.id)
        throw new ApiError(
          403,
          'Forbidden',
          "This cycle names another probe than the token's owner: a probe uploads its own cycles only.",
          undefined,
          {},
          'PROBE_MISMATCH',
        );
      return { success: true as const, ...(await hub.applyCycle(probe, request.body)) };
    },
  );
}

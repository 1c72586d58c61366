/**
 * GET /settings: every configuration variable of src/config.ts's table, its effective value
 * (secrets as ••••: never sent), where it came from and that a change needs a restart. Read only:
 * netkeep is configured by its environment.
 */
import { Type } from '@sinclair/typebox';
import { describeSettings, type Config } from '../config.js';
import type { App } from './app.js';
import { ErrorRef } from './schemas.js';

const SettingSchema = Type.Object({
  name: Type.String(),
  group: Type.String(),
  description: Type.String(),
  value: Type.String({ description: 'Effective value; a secret (or the secret part of a URL) is ••••.' }),
  default: Type.String(),
  source: Type.Union([Type.Literal('environment'), Type.Literal('.env'), Type.Literal('default')]),
  secret: Type.Boolean({ description: 'The value is hidden, in whole or in part.' }),
  restartRequired: Type.Literal(true, { description: 'Read once at start: a change takes a restart.' }),
});

export default async function settingsRoutes(app: App, opts: { readonly config: Config }): Promise<void> {
  // Computed once: the configuration is read at start and never changes while running.
  const settings = { settings: describeSettings(opts.config) };
  app.get(
    '/settings',
    {
      schema: {
        tags: ['settings'],
        summary:
          'Every configuration variable: effective value (secrets as ••••), where it came from (environment, .env, default), restart needed.',
        response: { 200: Type.Object({ settings: Type.Array(SettingSchema) }), 403: ErrorRef },
      },
    },
    async () => settings,
  );
}

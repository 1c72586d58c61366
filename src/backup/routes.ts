/**
 * GET /backup: a consistent snapshot of the store (THE backup of snapshot.ts, made with the
 * server's own connection) as a download, written to a temporary file in DATA_DIR first (the
 * online backup API writes a file) and removed once sent or abandoned. A cookie-only request must
 * come from this server's own pages (`toolRoute`): a download of the whole store is not a mere read.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, rmSync } from 'node:fs';
import { join } from 'node:path';
import { toolRoute } from '../http/auth.js';
import type { App } from '../http/app.js';
import { ErrorRef } from '../http/schemas.js';
import { fileStamp, type BackupStore } from '../store/backup.js';

export interface BackupRoutesOptions {
  readonly backup: BackupStore;
  readonly dataDir: string;
}

export default async function backupRoutes(app: App, opts: BackupRoutesOptions): Promise<void> {
  app.get(
    '/backup',
    {
      config: toolRoute,
      schema: {
        tags: ['backup'],
        summary:
          'A consistent copy of the store as a SQLite netkeep database (SQLite: its online backup; PostgreSQL: one snapshot of its tables; writes go on meanwhile), as the attachment netkeep-<UTC time>.db. Put it back with npm run restore.',
        response: { 403: ErrorRef },
      },
    },
    async (_request, reply) => {
      const temporary = join(opts.dataDir, `.backup-${randomBytes(8).toString('hex')}.db`);
      const remove = () => {
        rmSync(temporary, { force: true });
      };
      try {
        await opts.backup.snapshot(temporary);
      } catch (err) {
        remove();
        throw err;
      }
      const stream = createReadStream(temporary);
      // 'close' follows the end, an error, and a client that went away (the stream is destroyed).
      stream.on('close', remove);
      return reply
        .headers({
          'content-type': 'application/vnd.sqlite3',
          'content-disposition': `attachment; filename="netkeep-${fileStamp()}.db"`,
          'cache-control': 'no-store',
        })
        .send(stream);
    },
  );
}

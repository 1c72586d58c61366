/** The layering rules, checked on the source text (ESLint's no-restricted-imports checks the first too). */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const srcDir = fileURLToPath(new URL('../../src/', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** Files allowed to know HTTP: src/http itself, route plugins and the composition root. */
function mayImportHttp(file: string): boolean {
  const path = relative(srcDir, file);
  return (
    path.startsWith('http/') ||
    /(^|\/)routes\.ts$|-routes\.ts$/.test(path) ||
    path === 'server.ts' ||
    path === 'main.ts'
  );
}

test('domain modules import nothing from src/http/', () => {
  const offenders = sources(srcDir)
    .filter((file) => !mayImportHttp(file))
    .filter((file) => /from '(\.\.?\/)+(\.\.\/)*http\//.test(readFileSync(file, 'utf8')))
    .map((file) => relative(srcDir, file));
  assert.deepEqual(offenders, []);
});

test('comments in src/ cite nothing outside the repository (DESIGN sections, issue numbers)', () => {
  const offenders = sources(srcDir).flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .map((line, i) => ({ line, at: `${relative(srcDir, file)}:${i + 1}` }))
      .filter(({ line }) => /\bDESIGN\b|\bissue #?\d+|interface section \d/i.test(line))
      .map(({ at }) => at),
  );
  assert.deepEqual(offenders, []);
});

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

/** The store's tables (src/store/, DESIGN of the one gate): only src/store/ and src/db/ touch them. */
const storeTables = [
  'Devices',
  'Events',
  'Sessions',
  'DeviceHistoryTotals',
  'DeviceHistoryBuckets',
  'DeviceMacs',
  'DevicePorts',
  'WatchMemory',
  'ScanState',
  'Notifications',
  'NotificationPayloads',
];

/** Inside the gate: the store module and the low-level connection it uses. */
function insideGate(file: string): boolean {
  const path = relative(srcDir, file);
  return path.startsWith('store/') || path.startsWith('db/');
}

/** The text without its comments (string contents are kept: SQL lives there). */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

/** SQL over a store table: a keyword that names a table, in upper case as the project writes SQL. */
const tableSql = new RegExp(
  `\\b(?:FROM|INTO|UPDATE|JOIN|TABLE|ON|EXISTS)\\s+(?:main\\.|temp\\.)?"?(?:${storeTables.join('|')})\\b"?(?![\\w-])`,
);

/** What the gate forbids outside it: better-sqlite3, a database handle, SQL naming a store table. */
export function gateViolations(path: string, text: string): string[] {
  const code = withoutComments(text);
  const found: string[] = [];
  if (/from\s+'better-sqlite3'|require\(\s*'better-sqlite3'\s*\)|import\(\s*'better-sqlite3'\s*\)/.test(code))
    found.push(`${path}: imports better-sqlite3`);
  if (/from\s+'(?:\.\.?\/)+db\/connection\.js'/.test(code) || /\bopenDatabase\s*\(/.test(code))
    found.push(`${path}: opens a database handle`);
  if (/:\s*Database\b|\bDatabase\.Database\b|\bnew Database\s*\(/.test(code))
    found.push(`${path}: holds a Database`);
  const sql = tableSql.exec(code);
  if (sql !== null) found.push(`${path}: SQL over a store table (${sql[0]})`);
  return found;
}

test('one gate: outside src/store/ and src/db/, no file imports better-sqlite3, holds a handle or writes SQL over the store tables', () => {
  const offenders = sources(srcDir)
    .filter((file) => !insideGate(file))
    .flatMap((file) => gateViolations(relative(srcDir, file), readFileSync(file, 'utf8')));
  assert.deepEqual(offenders, []);
});

test('the gate check itself catches each kind of violation (and leaves prose and other SQL alone)', () => {
  assert.deepEqual(gateViolations('a.ts', "import Database from 'better-sqlite3';"), [
    'a.ts: imports better-sqlite3',
  ]);
  assert.equal(gateViolations('a.ts', "import type { Database } from 'better-sqlite3';").length, 1);
  assert.deepEqual(gateViolations('a.ts', 'constructor(private readonly db: Database) {}'), [
    'a.ts: holds a Database',
  ]);
  assert.deepEqual(gateViolations('a.ts', "import { openDatabase } from '../db/connection.js';"), [
    'a.ts: opens a database handle',
  ]);
  assert.deepEqual(gateViolations('a.ts', 'const sql = `SELECT devName FROM Devices WHERE devMac = ?`;'), [
    'a.ts: SQL over a store table (FROM Devices)',
  ]);
  assert.equal(gateViolations('a.ts', "db.prepare('UPDATE Notifications SET status = 1')").length, 1);
  assert.equal(gateViolations('a.ts', "'INSERT INTO main.Events (eve_MAC) VALUES (?)'").length, 1);
  // Prose in comments and messages, and SQL over other tables, are not violations.
  assert.deepEqual(gateViolations('a.ts', '// reads from Devices\n/* UPDATE Devices */ const x = 1;'), []);
  assert.deepEqual(gateViolations('a.ts', "throw new Error('no such device in Devices');"), []);
  assert.deepEqual(gateViolations('a.ts', "'SELECT value FROM Settings'"), []);
});

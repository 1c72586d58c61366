// Builds the web console (ui/) into dist/console: one script and one stylesheet named by their
// content hash, the HTML shell that loads them, a .br and a .gz copy of each (served by
// Accept-Encoding), and build.json with the sizes. The field catalogue, event types, periods and
// list options come from the compiled server (dist/src), so the console never keeps its own copy:
// run it after tsc. `node scripts/build-console.mjs` builds; ensureConsoleBuild() in lib.mjs calls it
// when anything it depends on is newer than the last build.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
const outDir = join(root, 'dist', 'console');
const fromDist = (path) => import(pathToFileURL(join(root, 'dist', 'src', path)).href);

/** The server's own lists, as the virtual module `netkeep:catalogue` the console imports. */
async function catalogueModule() {
  const { storedFields, bulkFieldNames } = await fromDist('devices/catalogue.js');
  const { eventTypes } = await fromDist('devices/history.js');
  const { sortColumns, deviceListStatuses } = await fromDist('devices/list-query.js');
  const { deviceGroups, totalsNames } = await fromDist('devices/status.js');
  const { periods } = await fromDist('time.js');
  const fields = storedFields.map(({ name, kind, editable, description, default: defaultValue }) => ({
    name,
    kind,
    editable,
    description,
    default: defaultValue,
  }));
  return [
    `export const fields = ${JSON.stringify(fields)};`,
    `export const bulkFields = ${JSON.stringify(bulkFieldNames)};`,
    `export const eventTypes = ${JSON.stringify(eventTypes)};`,
    `export const sortColumns = ${JSON.stringify(sortColumns)};`,
    `export const listStatuses = ${JSON.stringify(deviceListStatuses)};`,
    `export const deviceGroups = ${JSON.stringify(deviceGroups)};`,
    `export const totalsNames = ${JSON.stringify(totalsNames)};`,
    `export const periods = ${JSON.stringify(Object.keys(periods))};`,
  ].join('\n');
}

const catalogue = await catalogueModule();
rmSync(outDir, { recursive: true, force: true });
mkdirSync(join(outDir, 'assets'), { recursive: true });

const result = await esbuild.build({
  entryPoints: [join(root, 'ui', 'src', 'main.tsx')],
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  outdir: join(outDir, 'assets'),
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
  plugins: [
    {
      name: 'netkeep-catalogue',
      setup(build) {
        build.onResolve({ filter: /^netkeep:catalogue$/ }, () => ({
          path: 'catalogue',
          namespace: 'netkeep',
        }));
        build.onLoad({ filter: /.*/, namespace: 'netkeep' }, () => ({ contents: catalogue, loader: 'js' }));
      },
    },
  ],
});

const outputs = Object.keys(result.metafile.outputs).map((path) => join(root, path));
const script = outputs.find((path) => path.endsWith('.js'));
const style = outputs.find((path) => path.endsWith('.css'));
if (!script || !style) throw new Error('the console build made no script or no stylesheet');

const shell = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>netkeep</title>
<link rel="stylesheet" href="/ui/assets/${basename(style)}">
<script type="module" src="/ui/assets/${basename(script)}"></script>
</head>
<body>
<div id="app"><noscript>The netkeep console needs JavaScript.</noscript></div>
</body>
</html>
`;
writeFileSync(join(outDir, 'index.html'), shell);

const sizes = {};
for (const path of [join(outDir, 'index.html'), ...outputs]) {
  const content = readFileSync(path);
  const gz = gzipSync(content, { level: 9 });
  const br = brotliCompressSync(content, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 11,
      [constants.BROTLI_PARAM_SIZE_HINT]: content.length,
    },
  });
  writeFileSync(`${path}.gz`, gz);
  writeFileSync(`${path}.br`, br);
  sizes[basename(path)] = { bytes: content.length, gzip: gz.length, br: br.length };
}
writeFileSync(join(outDir, 'build.json'), `${JSON.stringify({ files: sizes }, null, 2)}\n`);
const first = [basename(script), basename(style), 'index.html'].map((name) => sizes[name]);
const total = (key) => first.reduce((sum, s) => sum + s[key], 0);
console.error(
  `netkeep: console built: first load ${total('bytes')} B, ${total('gzip')} B gzip, ${total('br')} B brotli`,
);

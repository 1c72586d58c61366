/**
 * `npm run bench` entry point: runs each bench module in sequence. A new benchmark adds one line to
 * `modules`. `npm run bench -- devices` runs only the named modules (`--store postgres`: also on
 * PostgreSQL, where a module supports it). Prints figures; asserts nothing.
 */
interface BenchModule {
  run(): Promise<void>;
}

const modules: Record<string, () => Promise<BenchModule>> = {
  devices: () => import('./devices.js'),
  scan: () => import('./scan.js'),
  nettools: () => import('./nettools.js'),
  alerts: () => import('./alerts.js'),
  import: () => import('./import.js'),
  csv: () => import('./csv.js'),
  live: () => import('./live.js'),
  console: () => import('./console.js'),
  mcp: () => import('./mcp.js'),
  soak: () => import('./soak.js'),
  names: () => import('./names.js'),
  watch: () => import('./watch.js'),
  probes: () => import('./probes.js'),
};

// Module names; `--store postgres` is an option of the modules that read it (lib.ts benchStores).
const args = process.argv.slice(2);
const wanted = args.filter((arg, i) => !arg.startsWith('--') && args[i - 1] !== '--store');
for (const name of wanted)
  if (!(name in modules))
    throw new Error(`unknown bench module '${name}'; known: ${Object.keys(modules).join(', ')}`);

for (const [name, load] of Object.entries(modules)) {
  if (wanted.length > 0 && !wanted.includes(name)) continue;
  console.log(`# bench: ${name}`);
  await (await load()).run();
}

// `rankd` stays light: each command loads what it uses and nothing more. TypeBox (~680
// files, ~200 ms of CPU at start-up), the planner and the daemons' code belong to the
// few commands that need them; `rankd run` printing its rank map is not one of them.
// The CLI runs from its bundle (packages/cli/dist/bundle/, made by `npm run build`): a file
// loaded from there stands for the source modules its manifest lists, so what is checked
// is still which modules a command loaded. RANKD_DEV=1 runs the compiled modules instead.
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { commandModules } from '#cli/commands/index';
import { localCluster } from '../helpers/cluster.js';
import { runCli } from '../helpers/daemons.js';

const REGISTER = pathToFileURL(join(import.meta.dirname, '../helpers/module-log/register.mjs')).href;
const ROOT = join(import.meta.dirname, '../..');
const BUNDLE = join(ROOT, 'packages/cli/dist/bundle');
const dir = t.testdir();
let runs = 0;

/** Output file of the bundle → the source modules in it, as written by scripts/bundle-cli.mjs. */
let manifest: Record<string, string[]> | undefined;
function bundled(file: string): string[] {
  manifest ??= JSON.parse(readFileSync(join(BUNDLE, 'manifest.json'), 'utf8')) as Record<string, string[]>;
  const inputs = manifest[basename(file)];
  if (!inputs) throw new Error(`${file} is not in the bundle's manifest: a bundle older than its manifest?`);
  return inputs.map((input) => pathToFileURL(join(ROOT, input)).href);
}

/** Runs the CLI and returns the modules it loaded, as file: URLs (bundle files expanded), and whether it ran from the bundle. */
async function cliLoading(args: string[], env: NodeJS.ProcessEnv = {}) {
  const log = join(dir, `run-${runs++}.log`);
  const r = await runCli(args, { ...env, RANKD_MODULE_LOG: log, NODE_OPTIONS: `--import ${REGISTER}` });
  const loaded = readFileSync(log, 'utf8')
    .split('\n')
    .filter((u) => u.startsWith('file:'));
  const bundleUrl = pathToFileURL(BUNDLE).href + '/';
  const files = loaded.flatMap((u) => (u.startsWith(bundleUrl) ? bundled(u) : [u]));
  return { ...r, loaded, files, fromBundle: loaded.some((u) => u.startsWith(bundleUrl)) };
}

/** What a client command must not load: the schema library, the planner, the daemons. */
function heavy(files: readonly string[]): string[] {
  return files.filter((u) => /\/node_modules\/typebox\/|\/packages\/(controller|agent|planner|topology)\//.test(u));
}

/** Commands that use heavy modules, and why. */
const NEEDS_HEAVY: Record<string, string> = {
  plan: "the planner's views (@rankd/planner/views), but not TypeBox: they import the protocol's cpuset module, not its index",
  facts: 'the facts readers (@rankd/topology)',
};

t.test('the CLI runs its bundle, or with RANKD_DEV=1 its compiled modules, never a mix of both', async (t) => {
  const r = await cliLoading(['version']);
  t.equal(r.code, 0, r.stderr);
  t.ok(r.fromBundle, 'by default the bundle ran');
  // the bundle's manifest lists cli.js as a source of rankd.js: it counts once
  t.equal(r.files.filter((u) => u.endsWith('/packages/cli/dist/cli.js')).length, 1, 'cli.js once, from the bundle');
  const compiledCli = r.loaded.filter(
    (u) =>
      u.includes('/packages/cli/dist/') && !u.includes('/packages/cli/dist/bundle/') && !u.endsWith('/dist/main.js'),
  );
  t.same(compiledCli, [], 'no compiled CLI module beside the bundle (main.js aside)');
  const dev = await cliLoading(['version'], { RANKD_DEV: '1' });
  t.equal(dev.code, 0, dev.stderr);
  t.notOk(dev.fromBundle, 'RANKD_DEV=1: no bundle file was loaded');
  t.equal(dev.files.filter((u) => u.endsWith('/packages/cli/dist/cli.js')).length, 1, 'the compiled cli.js ran');
  t.equal(dev.stdout, r.stdout, 'both print the same');
});

t.test('every command loads only its own module: nothing heavy for --help', async (t) => {
  for (const name of commandModules.flatMap((m) => m.names)) {
    const r = await cliLoading([name, '--help']);
    t.equal(r.code, 0, `rankd ${name} --help: ${r.stderr}`);
    if (NEEDS_HEAVY[name]) continue;
    t.same(heavy(r.files), [], `rankd ${name} --help loads nothing heavy`);
  }
});

t.test(
  'the hook sees what it should: rankd facts --help loads the facts readers; rankd plan --help the planner views, without TypeBox',
  async (t) => {
    const facts = await cliLoading(['facts', '--help']);
    t.ok(
      heavy(facts.files).filter((u) => u.includes('/packages/topology/')).length > 10,
      `${heavy(facts.files).length} heavy files`,
    );
    const plan = await cliLoading(['plan', '--help']);
    t.ok(heavy(plan.files).length > 0, 'the planner views are seen');
    t.same(
      plan.files.filter((u) => u.includes('/node_modules/typebox/')),
      [],
      'and no TypeBox',
    );
  },
);

t.test('rankd run prints the rank map without loading the planner or TypeBox', async (t) => {
  const { env } = await localCluster(t, ['solo']);
  const r = await cliLoading(['run', '-n', '2', '--', 'true'], env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /^rankd: job \S+\n {4}ID \| {15}Node name \| {13}IP \| Ranks\n/, 'the rank map header is printed');
  t.match(r.stderr, /\nworld size 2, master /);
  t.same(heavy(r.files), []);
});

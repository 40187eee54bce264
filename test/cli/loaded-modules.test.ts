// `rankd` stays light: each command loads what it uses and nothing more. TypeBox (~680
// files, ~200 ms of CPU at start-up), the planner and the daemons' code belong to the
// few commands that need them; `rankd run` printing its rank map is not one of them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { commandModules } from '@rankd/cli/commands/index';
import { localCluster } from '../helpers/cluster.js';
import { runCli } from '../helpers/daemons.js';

const REGISTER = pathToFileURL(join(import.meta.dirname, '../helpers/module-log/register.mjs')).href;
const dir = t.testdir();
let runs = 0;

/** Runs the CLI and returns the files it loaded, as file: URLs. */
async function cliLoading(args: string[], env: NodeJS.ProcessEnv = {}) {
  const log = join(dir, `run-${runs++}.log`);
  const r = await runCli(args, { ...env, RANKD_MODULE_LOG: log, NODE_OPTIONS: `--import ${REGISTER}` });
  const files = readFileSync(log, 'utf8').split('\n').filter((u) => u.startsWith('file:'));
  return { ...r, files };
}

/** What a client command must not load: the schema library, the planner, the daemons. */
function heavy(files: readonly string[]): string[] {
  return files.filter((u) => /\/node_modules\/typebox\/|\/packages\/(controller|agent)\//.test(u));
}

/** Commands that use heavy modules, and why. */
const NEEDS_HEAVY: Record<string, string> = {
  plan: "the planner's views (in the controller package), but not TypeBox: they import the protocol's cpuset module, not its index",
  facts: "the agent's facts readers",
};

t.test('every command loads only its own module: nothing heavy for --help', async (t) => {
  for (const name of commandModules.flatMap((m) => m.names)) {
    const r = await cliLoading([name, '--help']);
    t.equal(r.code, 0, `rankd ${name} --help: ${r.stderr}`);
    if (NEEDS_HEAVY[name]) continue;
    t.same(heavy(r.files), [], `rankd ${name} --help loads nothing heavy`);
  }
});

t.test("the hook sees what it should: rankd facts --help loads the agent's readers; rankd plan --help the planner views, without TypeBox", async (t) => {
  const facts = await cliLoading(['facts', '--help']);
  t.ok(heavy(facts.files).filter((u) => u.includes('/packages/agent/')).length > 10, `${heavy(facts.files).length} heavy files`);
  const plan = await cliLoading(['plan', '--help']);
  t.ok(heavy(plan.files).length > 0, 'the planner views are seen');
  t.same(plan.files.filter((u) => u.includes('/node_modules/typebox/')), [], 'and no TypeBox');
});

t.test('rankd run prints the rank map without loading the planner or TypeBox', async (t) => {
  const { env } = await localCluster(t, ['solo']);
  const r = await cliLoading(['run', '-n', '2', '--', 'true'], env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /^rankd: job \S+\n {4}ID \| {15}Node name \| {13}IP \| Ranks\n/, 'the rank map header is printed');
  t.match(r.stderr, /\nworld size 2, master /);
  t.same(heavy(r.files), []);
});

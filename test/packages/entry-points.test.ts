// Each workspace package is sealed: its package.json `exports` names only real entry points,
// never a "./*" pattern, and every other module is private to it. The few named subpaths
// exist for start-up cost (TypeBox alone is ~680 files and ~200 ms of CPU): they must stay
// free of it, or they save nothing. Tests reach internals through the root package's
// `imports` (#planner/*, #controller/*, …), which must name the very files the entries load.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import * as plannerEntry from '@rankd/planner';
import * as plannerIndex from '#planner/index';
import { PlanError } from '#planner/errors';

const ROOT = join(import.meta.dirname, '../..');
const REGISTER = pathToFileURL(join(import.meta.dirname, '../helpers/module-log/register.mjs')).href;
const isPackage = (dir: string) => existsSync(join(ROOT, 'packages', dir, 'package.json'));
const PACKAGES = readdirSync(join(ROOT, 'packages')).filter(isPackage);

interface Manifest {
  name: string;
  exports?: Record<string, string>;
}

function manifest(pkg: string): Manifest {
  return JSON.parse(readFileSync(join(ROOT, 'packages', pkg, 'package.json'), 'utf8')) as Manifest;
}

/** The file: URLs a fresh node loads when it imports `specifier` from the repository root. */
function loadedBy(specifier: string): string[] {
  const log = join(t.testdir(), `${specifier.replace(/\W+/g, '-')}.log`);
  const code = `await import(${JSON.stringify(specifier)});`;
  execFileSync(process.execPath, ['--import', REGISTER, '--input-type=module', '-e', code], {
    cwd: ROOT,
    env: { ...process.env, RANKD_MODULE_LOG: log },
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: 30_000,
  });
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((u) => u.startsWith('file:'));
}

const typebox = (files: string[]) => files.filter((u) => u.includes('/node_modules/typebox/'));

t.test('every package lists its entry points by name, and each one is built', async (t) => {
  const all = ['agent', 'cli', 'controller', 'dashboard', 'planner', 'protocol', 'topology'];
  t.same(PACKAGES.sort(), all, 'the workspace packages');
  for (const pkg of PACKAGES) {
    const { name, exports } = manifest(pkg);
    t.ok(exports, `${name} has an exports field: without one every file is importable`);
    for (const [subpath, target] of Object.entries(exports ?? {})) {
      t.notMatch(subpath + target, /\*/, `${name} ${subpath}: no pattern`);
      const built = existsSync(join(ROOT, 'packages', pkg, target));
      t.ok(built, `${name} ${subpath} -> ${target} exists (after npm run build)`);
    }
  }
  t.same(manifest('cli').exports, {}, '@rankd/cli is a program: it exports nothing');
  t.same(manifest('dashboard').exports, {}, '@rankd/dashboard is served as files: it exports nothing');
});

t.test('the named subpaths of @rankd/protocol, @rankd/planner/views and @rankd/topology load no TypeBox', async (t) => {
  // ./routes is the route table itself, schemas and all: the controller registers from it, the
  // CLI's build compiles its checks from it, and rankd loads it only to word a failed check
  const protocol = Object.keys(manifest('protocol').exports ?? {}).filter((s) => s !== '.' && s !== './routes');
  t.ok(protocol.length > 0, `${protocol.length} named protocol entries`);
  for (const subpath of protocol) {
    const specifier = `@rankd/protocol/${subpath.slice(2)}`;
    t.same(typebox(loadedBy(specifier)), [], specifier);
  }
  t.same(typebox(loadedBy('@rankd/planner/views')), [], '@rankd/planner/views (rankd plan shows a map with it)');
  t.same(typebox(loadedBy('@rankd/topology')), [], '@rankd/topology (rankd facts reads with it)');
  t.not(typebox(loadedBy('@rankd/protocol')).length, 0, 'the hook sees TypeBox where it is loaded: the protocol index');
  t.not(typebox(loadedBy('@rankd/protocol/routes')).length, 0, 'and the route table, the one named entry with schemas');
});

t.test("the daemons' entries load no daemon: rankd agent and rankd up pay only for what they run", async (t) => {
  const agent = loadedBy('@rankd/agent').filter((u) => u.includes('/packages/'));
  const dist = (file: string) => pathToFileURL(join(ROOT, 'packages', file)).href;
  const entry = [dist('agent/dist/index.js'), dist('agent/dist/load-daemon.js')];
  t.same(agent, entry, '@rankd/agent is loadDaemon() and types: the daemon comes from its bundle');
  const lock = loadedBy('@rankd/controller/data-dir-lock').filter((u) => /\/packages\/|\/node_modules\//.test(u));
  const lockFiles = ['packages/controller/dist/store/data-dir-lock.js', 'packages/protocol/dist/errors.js'];
  const lockLoaded = lock.map((u) => relative(ROOT, new URL(u).pathname));
  t.same(lockLoaded, lockFiles, 'the lock reader alone: no fastify, no SQLite');
});

t.test('the CLI imports the daemons only where it runs them: rankd agent, rankd controller, rankd up', async (t) => {
  const src = join(ROOT, 'packages/cli/src');
  const files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  const daemonSpecifier = /['"]@rankd\/(agent|controller)(\/[^'"]*)?['"]/;
  const namesDaemon = (file: string) => daemonSpecifier.test(readFileSync(join(src, file), 'utf8'));
  const daemonImports = files.filter(namesDaemon);
  t.same(daemonImports.sort(), ['commands/agent.ts', 'commands/controller.ts', 'commands/up.ts']);
});

t.test("a test's #package/* import and the package's entry are one module instance", async (t) => {
  t.equal(plannerIndex, plannerEntry, '#planner/index is @rankd/planner itself');
  t.equal(PlanError, plannerEntry.PlanError, 'a class from an internal path is the one the entry exports');
});

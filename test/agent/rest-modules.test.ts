// What an idle agent keeps loaded is what it holds in memory for its whole life (ES modules
// are never unloaded). Enrollment happens once and renewal every few weeks, so their X.509
// work must not leave a library behind: the key and CSR come from node:crypto. The agent
// runs from its bundle (packages/agent/dist/bundle/daemon.js, made by `npm run build`,
// scripts/bundle-agent.mjs): that file stands for the source modules its manifest lists.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { agentStateDir, spawnDaemon, startController, waitForNode } from '../helpers/daemons.js';
import { scratchDir } from '../helpers/scratch.js';

const REGISTER = pathToFileURL(join(import.meta.dirname, '../helpers/module-log/register.mjs')).href;
const ROOT = join(import.meta.dirname, '../..');
const BUNDLE = join(ROOT, 'packages/agent/dist/bundle');
const BUNDLE_URL = pathToFileURL(join(BUNDLE, 'daemon.js')).href;

/** The source modules in the agent's bundle, as file: URLs (its manifest, by scripts/bundle-agent.mjs). */
function bundled(): string[] {
  const manifest = JSON.parse(readFileSync(join(BUNDLE, 'manifest.json'), 'utf8')) as Record<string, string[]>;
  return manifest['daemon.js']!.map((input) => pathToFileURL(join(ROOT, input)).href);
}

t.test('an agent that enrolled at start runs one module graph and has loaded no X.509 library', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const name = 'rest-1';
  const stateDir = agentStateDir(controller, name);
  const log = join(t.testdir(), 'modules.log');
  const args = [
    'agent',
    '--controller',
    controller.url,
    '--ca-hash',
    controller.caHash,
    '--state-dir',
    stateDir,
    '--name',
    name,
    '--config',
    '/dev/null',
  ];
  args.push('--spool-dir', scratchDir('rankd-spool-'));
  if (process.getuid?.() === 0) args.push('--allow-root');
  const agent = spawnDaemon(args, {
    RANKD_JOIN_TOKEN: controller.joinToken,
    RANKD_MODULE_LOG: log,
    NODE_OPTIONS: `--import ${REGISTER}`,
  });
  t.teardown(() => agent.stop());
  await waitForNode(controller, name, 'ready');
  t.ok(existsSync(join(stateDir, 'node.crt')), 'the agent enrolled: its certificate is in the state directory');
  const loaded = readFileSync(log, 'utf8')
    .split('\n')
    .filter((u) => u.startsWith('file:'));
  const fromBundle = loaded.includes(BUNDLE_URL);
  const files = loaded.flatMap((u) => (u === BUNDLE_URL ? bundled() : [u]));
  t.ok(files.filter((u) => u.includes('/packages/agent/')).length > 10, 'the hook sees the agent’s own modules');
  t.same(
    files.filter((u) => /\/node_modules\/(@peculiar\/|reflect-metadata\/|tsyringe\/)/.test(u)),
    [],
    'no @peculiar/x509, reflect-metadata or tsyringe',
  );
  const daemon = files.filter((u) => u.endsWith('/packages/agent/dist/daemon.js'));
  t.equal(daemon.length, 1, 'the agent’s daemon module once, from the bundle: never a compiled copy beside it');
  t.ok(fromBundle, 'the agent ran its bundle');
  const outside = loaded.filter((u) =>
    /\/packages\/(agent|topology|protocol)\/dist\/|\/node_modules\/(typebox|ws|pino)\//.test(u),
  );
  const entry = ['index.js', 'load-daemon.js'].map((f) => pathToFileURL(join(ROOT, 'packages/agent/dist', f)).href);
  t.same(
    outside,
    [...entry, BUNDLE_URL],
    'from the bundle: no compiled agent, topology or protocol module, no TypeBox, ws or pino file beside it',
  );
});

// What an idle agent keeps loaded is what it holds in memory for its whole life (ES modules
// are never unloaded). Enrollment happens once and renewal every few weeks, so their X.509
// work must not leave a library behind: the key and CSR come from node:crypto.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { agentStateDir, spawnDaemon, startController, waitForNode } from '../helpers/daemons.js';

const REGISTER = pathToFileURL(join(import.meta.dirname, '../helpers/module-log/register.mjs')).href;

t.test('an agent that enrolled at start has loaded no X.509 library', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const name = 'rest-1';
  const stateDir = agentStateDir(controller, name);
  const log = join(t.testdir(), 'modules.log');
  const args = ['agent', '--controller', controller.url, '--ca-hash', controller.caHash, '--state-dir', stateDir, '--name', name, '--config', '/dev/null'];
  args.push('--spool-dir', mkdtempSync(join(tmpdir(), 'rankd-spool-')));
  if (process.getuid?.() === 0) args.push('--allow-root');
  const agent = spawnDaemon(args, { RANKD_JOIN_TOKEN: controller.joinToken, RANKD_MODULE_LOG: log, NODE_OPTIONS: `--import ${REGISTER}` });
  t.teardown(() => agent.stop());
  await waitForNode(controller, name, 'ready');
  t.ok(existsSync(join(stateDir, 'node.crt')), 'the agent enrolled: its certificate is in the state directory');
  const files = readFileSync(log, 'utf8').split('\n').filter((u) => u.startsWith('file:'));
  t.ok(files.filter((u) => u.includes('/packages/agent/')).length > 10, 'the hook sees the agent’s own modules');
  t.same(files.filter((u) => /\/node_modules\/(@peculiar\/|reflect-metadata\/|tsyringe\/)/.test(u)), [], 'no @peculiar/x509, reflect-metadata or tsyringe');
});

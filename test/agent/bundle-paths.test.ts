// The agent's bundle (packages/agent/dist/bundle/daemon.js, scripts/bundle-agent.mjs) finds
// the rank supervisor relative to its own module, as the compiled modules do: the binary
// in dist/native/, and the version it expects in the sources' native/version.h in a
// checkout, or in the copy beside the binary in an installed copy that has no sources
// (deploy/install.sh copies each package's dist only).
import { cpSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { expectedSupervisorVersion } from '#agent/ranks/supervisor-binary';

const AGENT = join(import.meta.dirname, '../../packages/agent');
const BUNDLE = join(AGENT, 'dist/bundle/daemon.js');
const NATIVE = join(AGENT, 'dist/native');
const skip = !existsSync(BUNDLE)
  ? 'no agent bundle: npm run build makes it (node scripts/bundle-agent.mjs)'
  : !existsSync(join(NATIVE, 'rank-supervisor')) && process.env.CI !== 'true'
    ? 'the rank supervisor is not built (npm run build)'
    : false;

type Daemon = typeof import('#agent/daemon');

/** The supervisor the bundle at this path finds. */
async function found(bundle: string) {
  const d = (await import(pathToFileURL(bundle).href)) as Daemon;
  return d.findSupervisor();
}

t.test("in a checkout the bundle uses the built supervisor and the sources' version", { skip }, async (t) => {
  t.same(await found(BUNDLE), {
    path: join(NATIVE, 'rank-supervisor'),
    version: expectedSupervisorVersion(),
    problem: null,
  });
});

t.test('in an installed copy without src the bundle uses what dist holds', { skip }, async (t) => {
  const dist = join(t.testdir(), 'app/packages/agent/dist');
  // what install.sh copies of the agent: its dist
  for (const rel of ['bundle', 'native']) {
    mkdirSync(join(dist, rel, '..'), { recursive: true });
    cpSync(join(AGENT, 'dist', rel), join(dist, rel), { recursive: true });
  }
  t.same(await found(join(dist, 'bundle/daemon.js')), {
    path: join(dist, 'native/rank-supervisor'),
    version: expectedSupervisorVersion(),
    problem: null,
  });
});

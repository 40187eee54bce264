// The agent's bundle (packages/agent/dist/bundle/daemon.js, scripts/bundle-agent.mjs) finds
// the files the agent starts ranks with relative to its own module, as the compiled
// modules do: the native rank launcher in dist/native/, supervisor.pl and the Open MPI perl
// scripts in the sources of a checkout, or in dist/ of an installed copy that has no src
// (deploy/install.sh copies each package's dist only).
import { cpSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';

const AGENT = join(import.meta.dirname, '../../packages/agent');
const BUNDLE = join(AGENT, 'dist/bundle/daemon.js');
const NATIVE = join(AGENT, 'dist/native/rank-supervisor');
const skip = existsSync(BUNDLE) ? false : 'no agent bundle: npm run build makes it (node scripts/bundle-agent.mjs)';

type Daemon = typeof import('@rankd/agent/daemon');

/** Where the bundle at this path finds the launcher and the scripts. */
async function found(bundle: string) {
  const d = (await import(pathToFileURL(bundle).href)) as Daemon;
  const native = detectOrNull(() => d.detectLauncher({ preference: 'native' }).command[0]);
  return { native, perl: d.detectLauncher({ preference: 'perl' }).command[1], ompiRank: d.scriptPath('ompi-rank.pl'), rshHelper: d.scriptPath('rsh-helper.pl') };
}

function detectOrNull(f: () => string | undefined): string | null {
  try {
    return f() ?? null;
  } catch {
    return null;
  }
}

t.test('in a checkout the bundle uses the sources’ scripts and the built launcher', { skip }, async (t) => {
  const f = await found(BUNDLE);
  t.same(f, {
    native: existsSync(NATIVE) ? NATIVE : null,
    perl: join(AGENT, 'src/ranks/supervisor.pl'),
    ompiRank: join(AGENT, 'src/openmpi/ompi-rank.pl'),
    rshHelper: join(AGENT, 'src/openmpi/rsh-helper.pl'),
  });
});

t.test('in an installed copy without src the bundle uses what dist holds', { skip }, async (t) => {
  const dist = join(t.testdir(), 'app/packages/agent/dist');
  // what install.sh copies of the agent: its dist, with the perl scripts the native build put there
  const copies: [from: string, rel: string][] = [
    ['dist', 'bundle'],
    ...(existsSync(NATIVE) ? [['dist', 'native'] as [string, string]] : []),
    ...['ranks/supervisor.pl', 'openmpi/ompi-rank.pl', 'openmpi/rsh-helper.pl'].map((rel): [string, string] => ['src', rel]),
  ];
  for (const [from, rel] of copies) {
    mkdirSync(join(dist, rel, '..'), { recursive: true });
    cpSync(join(AGENT, from, rel), join(dist, rel), { recursive: true });
  }
  const f = await found(join(dist, 'bundle/daemon.js'));
  t.same(f, {
    native: existsSync(NATIVE) ? join(dist, 'native/rank-supervisor') : null,
    perl: join(dist, 'ranks/supervisor.pl'),
    ompiRank: join(dist, 'openmpi/ompi-rank.pl'),
    rshHelper: join(dist, 'openmpi/rsh-helper.pl'),
  });
});

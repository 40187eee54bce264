// The /metrics page as a Prometheus server gets it: scraped with a reader token from a real
// controller that has stored rank output and timed its agent link, then linted by
// `promtool check metrics` (Prometheus's own rules: counters end in _total, base units,
// help on every family, …), and checked against docs/metrics.md, which must name every
// family. promtool comes with Debian's `prometheus` package: where it is missing the lint
// is skipped and says so, except in CI (CI=true), where a missing promtool fails.
import { spawn } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import t from 'tap';
import { runCli, waitUntil } from '../helpers/daemons.js';
import { localCluster } from '../helpers/cluster.js';

const MISSING = 'promtool not installed (Debian package prometheus)';
const DOCS = new URL('../../docs/metrics.md', import.meta.url);

function onPath(command: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const path = join(dir, command);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not in this directory
    }
  }
  return null;
}

/** Runs `promtool check metrics` with the exposition text on its stdin. */
function checkMetrics(
  promtool: string,
  text: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(promtool, ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('error', reject);
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(text);
  });
}

t.test('/metrics as Prometheus scrapes it: lint-clean and documented', async (t) => {
  // --heartbeat-ms 200: the gateway pings each agent every 0.6 s, so the round-trip histogram fills quickly
  const { controller, env } = await localCluster(t, ['p1'], { heartbeatMs: 200 });
  const run = await runCli(['run', '-q', '-n', '2', '--', 'sh', '-c', 'echo out; echo err >&2'], env);
  t.equal(run.code, 0, run.stderr);
  const user = await runCli(['user', 'add', 'prometheus', '--role', 'reader', '--json'], env);
  t.equal(user.code, 0, user.stderr);
  const reader = (JSON.parse(user.stdout) as { token: string }).token;
  const text = await waitUntil('a scrape with a ping round trip in it', 10_000, async () => {
    const r = await controller.api<string>('/metrics', { token: reader });
    return r.status === 200 && /^rankd_agent_link_rtt_seconds_count [1-9]/m.test(r.body) ? r.body : undefined;
  });
  const families = [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!);
  t.ok(families.length > 40, `${families.length} metric families`);

  const promtool = onPath('promtool');
  t.test(
    'promtool check metrics: exit 0, nothing to say',
    { skip: promtool || process.env.CI === 'true' ? false : MISSING },
    async (t) => {
      if (!promtool) {
        t.fail(`${MISSING}; CI=true requires it (scripts/test-deps.sh installs it)`);
        return;
      }
      const lint = await checkMetrics(promtool, text);
      t.equal(lint.code, 0, 'promtool exits 0');
      t.equal(lint.stdout, '', 'no complaint on stdout');
      t.equal(lint.stderr, '', 'no complaint on stderr');
    },
  );

  t.test('docs/metrics.md names every metric family', async (t) => {
    const docs = readFileSync(DOCS, 'utf8');
    const undocumented = families.filter((name) => !docs.includes('`' + name + '`'));
    t.same(undocumented, [], 'every family exposed is in the docs, in backquotes');
  });
});

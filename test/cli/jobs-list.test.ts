// `rankd jobs --limit/--state/--user/--since` and the START and ELAPSED columns of `rankd jobs`
// and `rankd job`, against a real controller and agent: each filter alone and combined, as
// the controller applies them (GET /v1/jobs); the role rules of --user, refused and audited;
// a bad value exits 64 before any request reaches the controller (its request counter says
// so); and a finished job's ELAPSED is its end minus its start, as squeue writes a TIME.
import t from 'tap';
import { runCli, waitUntil } from '../helpers/daemons.js';
import { localCluster } from '../helpers/cluster.js';
import { formatElapsed } from '#cli/elapsed';
import { since as sinceTime } from '#cli/options';

interface Summary {
  id: string;
  state: string;
  owner: string | null;
  createdAt: string;
  startedAt: string | null;
  endedAt: string | null;
}
interface View extends Summary {
  ranks: Array<{ rank: number; startedAt: string | null; endedAt: string | null }>;
}
interface AuditLike {
  user: string | null;
  method: string;
  route: string;
  resource: Record<string, string>;
  decision: string;
  status: number | null;
  reason: string;
}

/** The rows of a table `rankd` printed, as objects keyed by its header (cells are split at two spaces or more). */
function table(text: string): Array<Record<string, string>> {
  const [header, ...rows] = text.trimEnd().split('\n');
  const names = header!.split(/\s{2,}/);
  return rows.map((row) => Object.fromEntries(row.split(/\s{2,}/).map((cell, i) => [names[i]!, cell])));
}

const tableTime = (iso: string) => iso.replace('T', ' ').slice(0, 19);

t.test(
  'rankd jobs: filters by state, user and submission time, a limit that says what it left off, START and ELAPSED',
  async (t) => {
    const { controller, env } = await localCluster(t, ['solo']);
    const add = async (name: string, role: string) => {
      const r = await runCli(['user', 'add', name, '--role', role, '--json'], env);
      t.equal(r.code, 0, r.stderr);
      return { ...env, RANKD_TOKEN: (JSON.parse(r.stdout) as { token: string }).token };
    };
    const asOtto = await add('otto', 'operator');
    const asRita = await add('rita', 'reader');
    const asAlice = await add('alice', 'user');
    const ottoToken = asOtto.RANKD_TOKEN;

    const submit = async (command: string[], opts: { token?: string; exclusive?: boolean } = {}) => {
      const r = await controller.api<Summary>('/v1/jobs', {
        method: 'POST',
        ...(opts.token ? { token: opts.token } : {}),
        body: {
          command,
          cwd: '/tmp',
          grace: 1,
          placement: { ntasks: 1, ...(opts.exclusive ? { exclusive: true } : {}) },
        },
      });
      t.equal(r.status, 201, JSON.stringify(r.body));
      return r.body.id;
    };
    const ended = (id: string) =>
      waitUntil(`job ${id} to end`, 30_000, async () => {
        const v = await controller.api<View>(`/v1/jobs/${id}`);
        return v.body.endedAt !== null ? v.body : undefined;
      });

    // admin's: one succeeds, one fails, one runs a little over a second
    const ok = await submit(['true']);
    const bad = await submit(['false']);
    const slept = await submit(['sleep', '1.2']);
    const sleptView = await ended(slept);
    t.equal((await ended(ok)).state, 'succeeded');
    t.equal((await ended(bad)).state, 'failed');
    // everything from here on is submitted after this instant (created_at is in milliseconds)
    const mark = new Date().toISOString();
    await waitUntil('the clock to pass the mark', 1000, () => Date.now() > Date.parse(mark) + 2);
    const ottos = await submit(['true'], { token: ottoToken });
    t.equal((await ended(ottos)).state, 'succeeded');
    // one runs holding the whole node, so the next waits in the queue behind it
    const running = await submit(['sleep', '60'], { exclusive: true });
    await waitUntil(
      'the sleeper to run',
      30_000,
      async () => (await controller.api<View>(`/v1/jobs/${running}`)).body.state === 'running' || undefined,
    );
    const queued = await submit(['true'], { exclusive: true });
    t.equal((await controller.api<View>(`/v1/jobs/${queued}`)).body.state, 'queued', 'the second exclusive job waits');
    t.teardown(async () => {
      for (const id of [queued, running]) await controller.api(`/v1/jobs/${id}/cancel`, { method: 'POST' });
    });

    const ids = async (args: string[], as = env) => {
      const r = await runCli(['jobs', ...args], as);
      t.equal(r.code, 0, `rankd jobs ${args.join(' ')}: ${r.stderr}`);
      return table(r.stdout).map((row) => row['ID']!);
    };
    const all = [queued, running, ottos, slept, bad, ok];
    t.same(await ids([]), all, 'every job, newest first');

    t.test('--state: a state, several, squeue upper case, and the groups active and done', async (t) => {
      t.same(await ids(['--state', 'running']), [running]);
      t.same(await ids(['--state', 'queued']), [queued]);
      t.same(await ids(['--state', 'RUNNING']), [running], 'upper case, as squeue writes states');
      t.same(await ids(['--state', 'succeeded,failed']), [ottos, slept, bad, ok], 'comma-separated: any of them');
      t.same(await ids(['--state', 'active']), [queued, running], 'active: not ended');
      t.same(await ids(['--state', 'done']), [ottos, slept, bad, ok], 'done: ended');
      t.same(await ids(['--state', 'cancelled']), [], 'none cancelled');
    });

    t.test(
      '--user: anyone for admin, operator and reader; for the role user only itself, and the refusal is audited',
      async (t) => {
        t.same(await ids(['--user', 'otto']), [ottos], "the admin lists otto's jobs");
        t.same(await ids(['--user', 'admin'], asRita), [queued, running, slept, bad, ok], "a reader lists the admin's");
        t.same(await ids(['--user', 'alice'], asOtto), [], "an operator lists alice's (none)");
        t.same(await ids([], asAlice), [], 'alice lists only her own jobs (none)');
        t.same(await ids(['--user', 'alice'], asAlice), [], 'alice may name herself');
        const refused = await runCli(['jobs', '--user', 'otto'], asAlice);
        t.equal(refused.code, 77, 'alice naming otto: refused (exit 77)');
        t.equal(refused.stdout, '', 'nothing listed');
        t.match(
          refused.stderr,
          /user "alice" \(role user\) may not list the jobs of "otto": that role lists its own jobs only; the role admin or operator or reader lists anyone's \(RANKD_FORBIDDEN\)/,
        );
        const audit = await controller.api<{ entries: AuditLike[] }>('/v1/audit');
        const entry = audit.body.entries.find((e) => e.route === '/v1/jobs' && e.user === 'alice');
        t.match(
          entry,
          { method: 'GET', decision: 'deny', status: 403, resource: { user: 'otto' } },
          'the refusal is in the audit log, naming whose jobs were asked for',
        );
      },
    );

    t.test('--since: a time back from now or an ISO time; submission at or after it', async (t) => {
      t.same(await ids(['--since', '1h']), all, 'all were submitted within the hour');
      t.same(await ids(['--since', '1d', '--state', 'done']), [ottos, slept, bad, ok]);
      t.same(await ids(['--since', mark]), [queued, running, ottos], 'an ISO time: only what was submitted after it');
      t.same(await ids(['--since', new Date(Date.now() + 3_600_000).toISOString()]), [], 'a time to come: none');
    });

    t.test('filters combined: every one must hold', async (t) => {
      t.same(await ids(['--since', mark, '--state', 'done']), [ottos]);
      t.same(await ids(['--since', mark, '--state', 'done', '--user', 'admin']), []);
      t.same(await ids(['--state', 'succeeded', '--user', 'admin']), [slept, ok]);
      t.same(await ids(['--state', 'active', '--user', 'admin', '--limit', '1']), [queued]);
    });

    t.test('--limit: at most that many, and a note with the command that lists more', async (t) => {
      const r = await runCli(['jobs', '--limit', '2', '--state', 'done'], env);
      t.equal(r.code, 0, r.stderr);
      t.same(
        table(r.stdout).map((row) => row['ID']),
        [ottos, slept],
        'the newest two',
      );
      t.equal(
        r.stderr,
        'rankd: more jobs match than the 2 shown; to list up to 1000: rankd jobs --state done --limit 1000\n',
      );
      const pasted = await runCli(['jobs', '--state', 'done', '--limit', '1000'], env);
      t.equal(table(pasted.stdout).length, 4, 'the suggested command lists them all');
      t.equal(pasted.stderr, '', 'and has no note: nothing was left off');
      const exact = await runCli(['jobs', '--limit', '6'], env);
      t.equal(exact.stderr, '', 'as many as match: nothing left off, no note');
      const json = await runCli(['jobs', '--state', 'done', '--since', mark, '--json'], env);
      const printed = JSON.parse(json.stdout) as Summary[] | { jobs: Summary[] };
      const rest = await controller.api<{ jobs: Summary[]; more: boolean }>(
        `/v1/jobs?state=done&since=${encodeURIComponent(mark)}`,
      );
      t.same(
        Array.isArray(printed) ? printed : printed.jobs,
        rest.body.jobs,
        '--json: the jobs REST answers for the same filters',
      );
      t.equal(rest.body.more, false);
    });

    t.test('bad values exit 64, name the flag, and send nothing', async (t) => {
      const requests = async () => {
        const r = await controller.api<string>('/metrics');
        // every REST request answered but these scrapes themselves
        return r.body
          .split('\n')
          .filter((l) => l.startsWith('rankd_http_requests_total{') && !l.includes('route="/metrics"'))
          .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
      };
      const before = await requests();
      t.ok(before > 0, 'the counter counts the requests so far');
      for (const [args, flag, why] of [
        [['--limit', '0'], '--limit', /"0" is not a positive integer/],
        [['--limit', '1001'], '--limit', /1001 is over the most a listing holds, 1000/],
        [['--limit', 'ten'], '--limit', /"ten" is not a positive integer/],
        [
          ['--state', 'bogus'],
          '--state',
          /"bogus" is not a job state; the states are queued, pending, .*, active, done/,
        ],
        [['--state', 'running,'], '--state', /"" is not a job state/],
        [['--user', 'Not A User'], '--user', /is not a rankd user name/],
        [['--since', 'yesterday'], '--since', /"yesterday" is not a duration \(e\.g\. 30s, 15m, 2h\) or an ISO time/],
        [['--since', '2026-13-45'], '--since', /"2026-13-45" is not a duration/],
        [['--since', '2h ago'], '--since', /"2h ago" is not a duration/],
      ] as const) {
        const r = await runCli(['jobs', ...args], env);
        t.equal(r.code, 64, `${args.join(' ')}: exit 64`);
        t.equal(r.stdout, '', `${args.join(' ')}: nothing listed`);
        t.match(r.stderr, new RegExp(`^rankd: ${flag}: `), `${args.join(' ')}: names the flag`);
        t.match(r.stderr, why, `${args.join(' ')}: says why`);
      }
      t.equal(await requests(), before, 'no request reached the controller');
    });

    t.test('REST refuses bad filters from any client, naming them', async (t) => {
      const state = await controller.api<{ code: string; message: string }>('/v1/jobs?state=running,bogus');
      t.equal(state.status, 400);
      t.match(state.body, {
        code: 'RANKD_INVALID_REQUEST',
        message: /state=running,bogus: "bogus" is not a job state/,
      });
      const since = await controller.api<{ code: string; message: string }>('/v1/jobs?since=soon');
      t.equal(since.status, 400);
      t.match(since.body, {
        code: 'RANKD_INVALID_REQUEST',
        message: /since=soon: an ISO time or milliseconds since the epoch/,
      });
      t.equal((await controller.api('/v1/jobs?limit=1001')).status, 400);
      t.equal((await controller.api('/v1/jobs?idPrefix=a%2Fb')).status, 400, 'an id prefix holds id characters only');
    });

    t.test(
      'START and ELAPSED: a finished job from its start to its end, a running one up to now, a queued one "-"',
      async (t) => {
        const rows = table((await runCli(['jobs'], env)).stdout);
        const row = (id: string) => rows.find((r) => r['ID'] === id)!;
        t.equal(row(slept)['START'], tableTime(sleptView.startedAt!), 'START: when its ranks were started (UTC)');
        const expected = formatElapsed(Date.parse(sleptView.endedAt!) - Date.parse(sleptView.startedAt!));
        t.equal(row(slept)['ELAPSED'], expected, `ELAPSED: end minus start (${expected})`);
        t.match(expected, /^0:0[1-9]$/, 'a job of sleep 1.2 ran for more than one whole second');
        t.match(row(running)['ELAPSED'], /^\d+:\d\d$/, 'a running job: up to now');
        t.same([row(queued)['START'], row(queued)['ELAPSED']], ['-', '-'], 'a queued job has neither');

        const job = await runCli(['job', slept], env);
        t.equal(job.code, 0, job.stderr);
        t.match(
          job.stdout,
          `start: ${tableTime(sleptView.startedAt!)}  end: ${tableTime(sleptView.endedAt!)}  elapsed: ${expected}\n`,
          "rankd job: the job's start, end and elapsed",
        );
        const ranks = table(job.stdout.slice(job.stdout.indexOf('RANK ')));
        const rank0 = sleptView.ranks[0]!;
        t.equal(ranks[0]!['START'], tableTime(rank0.startedAt!), "rank 0's start");
        t.equal(
          ranks[0]!['ELAPSED'],
          formatElapsed(Date.parse(rank0.endedAt!) - Date.parse(rank0.startedAt!)),
          "rank 0's elapsed: its end minus its start",
        );
        const waiting = await runCli(['job', queued], env);
        t.match(waiting.stdout, /start: - {2}end: - {2}elapsed: -\n/, 'a queued job: no start, end or elapsed');
      },
    );
  },
);

t.test('ELAPSED is written as squeue writes TIME: M:SS, H:MM:SS, D-HH:MM:SS', async (t) => {
  for (const [ms, text] of [
    [0, '0:00'],
    [999, '0:00'],
    [59_000, '0:59'],
    [61_000, '1:01'],
    [3_599_000, '59:59'],
    [3_600_000, '1:00:00'],
    [36_061_000, '10:01:01'],
    [86_399_000, '23:59:59'],
    [86_400_000, '1-00:00:00'],
    [(3 * 86_400 + 4 * 3600 + 5 * 60 + 6) * 1000, '3-04:05:06'],
    [-5000, '0:00'],
  ] as const) {
    t.equal(formatElapsed(ms), text, `${ms} ms`);
  }
});

t.test(
  '--since: a time back from now is that long before the call; an ISO time without an offset is local',
  async (t) => {
    for (const [text, ms] of [
      ['90s', 90_000],
      ['30m', 1_800_000],
      ['2h', 7_200_000],
      ['1d', 86_400_000],
    ] as const) {
      const before = Date.now();
      const at = Date.parse(sinceTime(text));
      const after = Date.now();
      t.ok(at >= before - ms && at <= after - ms, `${text}: ${ms} ms before now`);
    }
    t.equal(sinceTime('2026-11-25'), new Date(2026, 10, 25).toISOString(), 'a date alone: local midnight');
    t.equal(
      sinceTime('2026-11-25T14:30'),
      new Date(2026, 10, 25, 14, 30).toISOString(),
      'a time without an offset: local',
    );
    t.equal(sinceTime('2026-11-25T14:30:05.250Z'), '2026-11-25T14:30:05.250Z', 'Z: UTC');
    t.equal(sinceTime('2026-11-25T14:30+02:00'), '2026-11-25T12:30:00.000Z', 'an offset');
    for (const bad of ['', '2h ago', '-2h', '1w', 'Tue Nov 25 2026', '2026-02-30T25:00', '2026-02-30', '2026-00-10']) {
      t.throws(
        () => sinceTime(bad),
        { message: new RegExp(`^"${bad}" is not a duration`) },
        `${JSON.stringify(bad)} is refused`,
      );
    }
  },
);

// Unique-prefix job ids in `rankd job`, `rankd logs` and `rankd cancel`, against a real
// controller and agent: a unique prefix acts on its job; an ambiguous one exits 64 and lists
// the candidates; an unknown one says so (exit 65); one under four characters is refused.
// A prefix is resolved among the jobs the caller may list: to a user who cannot see another
// user's job, a prefix of it answers exactly as a prefix of no job does, and acts on nothing.
import t, { type Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { runCli, waitUntil } from '../helpers/daemons.js';
import { localCluster } from '../helpers/cluster.js';

interface View {
  id: string;
  state: string;
  owner: string | null;
  endedAt: string | null;
}

const isRoot = process.getuid?.() === 0;

/** A Unix user for alice's jobs (removed at teardown); null when not root, which cannot make one. */
function unixUser(t: Test): string | null {
  if (!isRoot) return null;
  const name = `rkdp${randomBytes(3).toString('hex')}`;
  execFileSync('useradd', ['--no-create-home', '--shell', '/usr/sbin/nologin', name]);
  t.teardown(() => {
    try {
      execFileSync('userdel', [name]);
    } catch {
      // already gone
    }
  });
  return name;
}

/** The shortest prefix of `id`, four characters at least, that starts no other of `ids`. */
function uniquePrefix(id: string, ids: readonly string[]): string {
  for (let n = 4; n <= id.length; n++) {
    const p = id.slice(0, n);
    if (ids.every((other) => other === id || !other.startsWith(p))) return p;
  }
  return id;
}

/** The longest prefix every one of `ids` starts with. */
function commonPrefix(ids: readonly string[]): string {
  let p = ids[0]!;
  for (const id of ids) while (!id.startsWith(p)) p = p.slice(0, -1);
  return p;
}

t.test(
  "job ids by unique prefix: job, logs and cancel; ambiguous, unknown, too short; never another user's job",
  async (t) => {
    const { controller, env } = await localCluster(t, ['solo']);
    const unix = unixUser(t);
    const addUser = async (name: string, role: string, extra: string[] = []) => {
      const r = await runCli(['user', 'add', name, '--role', role, ...extra, '--json'], env);
      t.equal(r.code, 0, r.stderr);
      return { ...env, RANKD_TOKEN: (JSON.parse(r.stdout) as { token: string }).token };
    };
    const asAlice = await addUser('alice', 'user', unix ? ['--unix-user', unix] : []);
    const asRita = await addUser('rita', 'reader');

    const submit = async (command: string[], token?: string) => {
      const r = await controller.api<View>('/v1/jobs', {
        method: 'POST',
        ...(token ? { token } : {}),
        body: { command, cwd: '/tmp', grace: 1, placement: { ntasks: 1 } },
      });
      t.equal(r.status, 201, JSON.stringify(r.body));
      return r.body.id;
    };
    const view = async (id: string) => (await controller.api<View>(`/v1/jobs/${id}`)).body;
    const ended = (id: string) =>
      waitUntil(`job ${id} to end`, 30_000, async () => ((await view(id)).endedAt !== null ? view(id) : undefined));

    const a = await submit(['echo', 'hello from a']);
    const b = await submit(['echo', 'hello from b']);
    await ended(a);
    await ended(b);
    const sleeper = await submit(['sleep', '60']);
    t.teardown(() => controller.api(`/v1/jobs/${sleeper}/cancel`, { method: 'POST' }));
    await waitUntil('the sleeper to run', 30_000, async () => (await view(sleeper)).state === 'running' || undefined);
    const adminJobs = [a, b, sleeper];

    t.test('a unique prefix acts on its job in job, logs and cancel', async (t) => {
      const pa = uniquePrefix(a, adminJobs);
      t.ok(pa.length < a.length, `${pa} is shorter than ${a}`);
      const shown = await runCli(['job', pa], env);
      t.equal(shown.code, 0, shown.stderr);
      t.match(shown.stdout, new RegExp(`^job ${a}  succeeded`), `rankd job ${pa}: job ${a}`);
      const json = await runCli(['job', pa, '--json'], env);
      t.equal((JSON.parse(json.stdout) as View).id, a, '--json too');
      const logs = await runCli(['logs', uniquePrefix(b, adminJobs)], env);
      t.equal(logs.code, 0, logs.stderr);
      t.equal(logs.stdout, '0: hello from b\n', "rankd logs: b's output");
      const full = await runCli(['job', a], env);
      t.equal(full.code, 0, 'a whole id still works');

      const ps = uniquePrefix(sleeper, adminJobs);
      const cancelled = await runCli(['cancel', ps], env);
      t.equal(cancelled.code, 0, cancelled.stderr);
      t.match(cancelled.stderr, `rankd: job ${sleeper}: stopping: cancelled by request`);
      const after = await ended(sleeper);
      t.equal(after.state, 'cancelled', 'the sleeper, and only it, is cancelled');
      t.equal((await view(a)).state, 'succeeded');
    });

    t.test(
      'an ambiguous prefix exits 64 and lists the candidates; a short one is refused; an unknown one says so',
      async (t) => {
        const common = commonPrefix(adminJobs);
        t.ok(common.length >= 4, `the jobs share the prefix ${common} (their ids begin with their creation time)`);
        for (const command of [
          ['job', common],
          ['logs', common],
          ['cancel', common],
        ]) {
          const r = await runCli(command, env);
          t.equal(r.code, 64, `rankd ${command.join(' ')}: exit 64`);
          t.equal(r.stdout, '', 'nothing printed on stdout');
          t.match(
            r.stderr,
            `rankd: job id prefix "${common}" is ambiguous: it matches 3 jobs; type more of the id\n  ID `,
            'says so',
          );
          for (const id of adminJobs) t.match(r.stderr, new RegExp(`\\n  ${id}  \\S+`), `lists ${id}`);
        }
        t.equal((await view(a)).state, 'succeeded', 'nothing was cancelled');

        const short = await runCli(['job', a.slice(0, 3)], env);
        t.equal(short.code, 64, 'three characters: exit 64');
        t.match(
          short.stderr,
          `job id "${a.slice(0, 3)}" is too short to be a prefix: type at least 4 characters of the id`,
        );

        const unknown = await runCli(['job', 'jzzzzzz'], env);
        t.equal(unknown.code, 65, 'a prefix of no job: exit 65');
        t.equal(unknown.stderr, 'rankd: controller answered 404: unknown job "jzzzzzz" (RANKD_NOT_FOUND)\n');
        const notAnId = await runCli(['cancel', '../etc'], env);
        t.equal(notAnId.code, 64);
        t.match(notAnId.stderr, '"../etc" is not a job id: ids are letters, digits, "_" and "-"');
      },
    );

    t.test("another user's job: a prefix of it is answered as a prefix of no job, and acts on nothing", async (t) => {
      const sleeper2 = await submit(['sleep', '60']);
      t.teardown(() => controller.api(`/v1/jobs/${sleeper2}/cancel`, { method: 'POST' }));
      await waitUntil(
        'the second sleeper to run',
        30_000,
        async () => (await view(sleeper2)).state === 'running' || undefined,
      );
      const jobs = [...adminJobs, sleeper2];
      const hidden = uniquePrefix(sleeper2, jobs);
      const nothing = await runCli(['job', 'jzzzzzz'], asAlice);
      for (const command of [
        ['job', hidden],
        ['logs', hidden],
        ['cancel', hidden],
      ]) {
        const r = await runCli(command, asAlice);
        t.equal(
          r.code,
          nothing.code,
          `alice: rankd ${command.join(' ')}: the exit of a prefix of no job (${nothing.code})`,
        );
        t.equal(r.stderr, nothing.stderr.replace('jzzzzzz', hidden), 'and its message, word for word');
        t.notMatch(r.stderr, sleeper2, 'the id is not revealed');
        t.notMatch(r.stderr, /admin|ambiguous|belongs/, 'nor its owner, nor that it exists');
        t.equal(r.stdout, '');
      }
      t.equal((await view(sleeper2)).state, 'running', "alice's cancel did nothing");
      // the admin's jobs share a prefix: to alice it is not ambiguous, it is nothing
      const common = commonPrefix(jobs);
      const r = await runCli(['job', common], asAlice);
      t.equal(r.code, nothing.code, `alice: rankd job ${common}: as a prefix of no job`);
      t.notMatch(r.stderr, /ambiguous/);
      // a reader lists every job, and so sees the candidates
      const rita = await runCli(['job', common], asRita);
      t.equal(rita.code, 64, 'a reader: ambiguous');
      for (const id of jobs) t.match(rita.stderr, id, `a reader sees ${id} among the candidates`);

      if (!unix) {
        t.comment('not root: no Unix user can be made, so alice submits no job of her own here');
        return;
      }
      // alice's own job shares the admin's jobs' prefix: among hers it is unique (the sleeper
      // ends first: it holds the node, and hers would wait)
      await controller.api(`/v1/jobs/${sleeper2}/cancel`, { method: 'POST' });
      await ended(sleeper2);
      const mine = await submit(['echo', 'alice here'], asAlice.RANKD_TOKEN);
      t.equal((await ended(mine)).state, 'succeeded');
      const shared = commonPrefix([...jobs, mine]);
      const resolved = await runCli(['job', shared, '--json'], asAlice);
      t.equal(resolved.code, 0, resolved.stderr);
      t.equal((JSON.parse(resolved.stdout) as View).id, mine, `alice: ${shared} is her job`);
      const logs = await runCli(['logs', shared], asAlice);
      t.equal(logs.stdout, '0: alice here\n', 'and her logs');
      const admin = await runCli(['job', shared], env);
      t.equal(admin.code, 64, 'to the admin, who sees all five, the same prefix is ambiguous');
      t.match(admin.stderr, mine);
    });
  },
);

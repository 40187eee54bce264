// The dashboard's view of gang restarts, in Debian's Chromium against a real controller and
// agent: a job that restarted once shows two attempt bars on its page, the first with its
// failure (rank, node, exit, last line of stderr) and the wait before the second; a job
// waiting out its --restart-delay shows in the queue as restarting (attempt k/N).
import t from 'tap';
import type { Page } from 'playwright-core';
import { runCli, waitUntil } from '../helpers/daemons.js';
import { localCluster } from '../helpers/cluster.js';
import { browserMissing, launchChromium, spkiPin } from '../helpers/browser.js';

const missing = browserMissing();

interface JobLike {
  id: string;
  state: string;
  attempt: number;
  endedAt: string | null;
}

t.test('a restarted job on the dashboard: its attempts as a timeline', { skip: missing ?? false }, async (t) => {
  const { controller: c, env } = await localCluster(t, ['local']);

  // attempt 0 writes a line to stderr and exits 3; attempt 1 succeeds
  const script = '[ "$RANKD_ATTEMPT" = 1 ] && exit 0; echo "CUDA error: an illegal memory access" >&2; exit 3';
  const run = await runCli(
    ['run', '-q', '--name', 'flaky', '-n', '1', '--max-restarts', '1', '--', 'sh', '-c', script],
    env,
  );
  t.equal(run.code, 0, `the second attempt succeeded: ${run.stderr}`);
  const flaky = (await c.api<{ jobs: Array<{ id: string }> }>('/v1/jobs?limit=1')).body.jobs[0]!.id;

  // a job that fails at once and then waits two minutes for its next attempt, cancelled at the end
  const waiting = await c.api<JobLike>('/v1/jobs', {
    method: 'POST',
    body: {
      name: 'waiter',
      command: ['sh', '-c', 'exit 4'],
      cwd: '/tmp',
      placement: { ntasks: 1 },
      maxRestarts: 2,
      restartDelay: 120,
    },
  });
  t.equal(waiting.status, 201, JSON.stringify(waiting.body));
  const waiter = waiting.body.id;
  t.teardown(async () => {
    await c.api(`/v1/jobs/${waiter}/cancel`, { method: 'POST' });
    await waitUntil(
      'the waiting job to end',
      10_000,
      async () => (await c.api<JobLike>(`/v1/jobs/${waiter}`)).body.endedAt !== null,
    ).catch(() => {});
  });
  await waitUntil('the job to wait for its next attempt', 15_000, async () => {
    const v = (await c.api<JobLike>(`/v1/jobs/${waiter}`)).body;
    return v.state === 'queued' && v.attempt === 1;
  });

  const browser = await launchChromium(await spkiPin(c.url, c.ca));
  t.teardown(() => browser.close());
  const page: Page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(15_000);
  const login = await runCli(['dashboard'], c.clientEnv);
  t.equal(login.code, 0, login.stderr);
  await page.goto(login.stdout.trim());
  await page.getByRole('heading', { name: 'Fleet' }).waitFor();

  await t.test('the job list and the queue show the attempts', async (t) => {
    await page.getByRole('link', { name: 'Jobs' }).click();
    const queued = page.getByRole('table', { name: 'Queued jobs' }).locator(`tr[data-job="${waiter}"]`);
    await queued.waitFor();
    t.match(await queued.innerText(), /waiter restarting \(attempt 1\/2\)/, 'the waiting job is restarting');
    t.match(await queued.innerText(), /restart 1\/2: /, 'with the reason it waits');
    const recent = page.getByRole('table', { name: 'Recent jobs' }).locator(`tr[data-job="${flaky}"]`);
    t.match(await recent.innerText(), /succeeded attempt 1\/1/, 'the restarted job: its last attempt');
  });

  await t.test('the restarted job: two bars, the first failure, the wait before the second', async (t) => {
    await page.goto(`${new URL(c.url).origin}/ui/#/jobs/${flaky}`);
    await page.getByRole('heading', { name: /Job flaky/ }).waitFor();
    const timeline = page.getByRole('list', { name: 'Attempt timeline' });
    await timeline.waitFor();
    const bars = timeline.locator('.attempt .bar');
    t.equal(await bars.count(), 2, 'two attempt bars');
    t.match(await bars.nth(0).getAttribute('class'), /state-failed/, 'the first coloured as failed');
    t.match(await bars.nth(1).getAttribute('class'), /state-succeeded/, 'the second as succeeded');
    const first = timeline.locator('.attempt[data-attempt="0"]');
    const text = await first.innerText();
    t.match(text, /First failure: rank 0 on local exited with code 3/, 'rank, node and exit');
    t.match(text, /last line: CUDA error: an illegal memory access/, 'and the last line of its stderr');
    t.match(text, /on local/, 'its nodes');
    t.match(text, /Next attempt after \d/, 'the wait before the next one');
    t.notMatch(await timeline.locator('.attempt[data-attempt="1"]').innerText(), /First failure/);

    // the bars lie on one axis, in order, without overlapping
    const [a, b] = [await bars.nth(0).boundingBox(), await bars.nth(1).boundingBox()];
    t.ok(
      a && b && a.x + a.width <= b.x + 1,
      `attempt 1's bar starts after attempt 0's ends (${a?.x}+${a?.width}, ${b?.x})`,
    );
    const track = await timeline.locator('.attempt[data-attempt="0"] .track').boundingBox();
    t.ok(track && b && b.x + b.width <= track.x + track.width + 1, 'within the track');
  });

  await t.test('the waiting job: its failed attempt, and why it waits', async (t) => {
    await page.goto(`${new URL(c.url).origin}/ui/#/jobs/${waiter}`);
    await page.getByRole('heading', { name: /Job waiter/ }).waitFor();
    const section = page.getByRole('region', { name: 'Attempts' });
    await section.waitFor();
    t.match(await section.locator('.summary').innerText(), /attempt 1\/2 · restart 1\/2: next attempt at /);
    const only = section.locator('.attempt[data-attempt="0"]');
    t.match(await only.innerText(), /rank 0 on local exited with code 4/);
    t.match(await only.innerText(), /Next attempt after 120 s/);
    const bar = await only.locator('.bar').boundingBox();
    const wait = await only.locator('.wait').boundingBox();
    t.ok(bar && wait && wait.x >= bar.x + bar.width - 1, 'its wait is drawn after its bar');
    t.ok(bar && wait && wait.width > bar.width * 10, 'and is far longer: 120 s against an attempt that failed at once');
    t.match(await section.locator('.axis').innerText(), /\(next attempt due\)/, 'the axis runs to the next attempt');
  });
});

// The dashboard in Debian's Chromium against a real controller, a real agent on this machine
// and a real agent reading a generated 8-GPU EPYC topology (--root): sign in with the URL
// `rankd dashboard` prints, find the nodes, see the topology with its devices in the right
// NUMA nodes, follow a running job's rank map and output, cancel it from the page, and
// check that a reader can do none of that, plus landmarks, labels and keyboard focus.
import t from 'tap';
import type { BrowserContext, Page } from 'playwright-core';
import { runCli, startAgent, startController, waitForNode, waitUntil } from '../helpers/daemons.js';
import { buildSysfs } from '../helpers/sysfs-fixture.js';
import { epycNps4Gpu8 } from '../helpers/machines.js';
import { browserMissing, launchChromium, recordPage, shown, spkiPin } from '../helpers/browser.js';
import { scratchDir } from '../helpers/scratch.js';

// what page.evaluate callbacks touch runs in the browser; the test project has no DOM types
declare const document: any, getComputedStyle: any;
type Element = any;

const missing = browserMissing();

t.test('the dashboard in a browser', { skip: missing ?? false }, async (t) => {
  const c = await startController();
  t.teardown(() => c.stop());
  const local = startAgent(c, { name: 'local' });
  t.teardown(() => local.stop());
  const root = buildSysfs(scratchDir('rankd-dgx-'), epycNps4Gpu8(1));
  const dgx = startAgent(c, { name: 'dgx1', root });
  t.teardown(() => dgx.stop());
  await waitForNode(c, 'local', 'ready');
  await waitForNode(c, 'dgx1', 'ready');

  const browser = await launchChromium(await spkiPin(c.url, c.ca));
  t.teardown(() => browser.close());
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const pageRecord = recordPage(page);

  // a job that prints until cancelled, on this machine's agent; bounded (about 2 minutes) so
  // that a failed test never leaves it running: ranks outlive their agent by design
  const job = await c.api<{ id: string }>('/v1/jobs', {
    method: 'POST',
    body: {
      name: 'printer',
      command: ['sh', '-c', 'i=0; while [ $i -lt 6000 ]; do echo "tick $i"; i=$((i+1)); sleep 0.02; done'],
      placement: { nodelist: ['local'], ntasks: 1, cpusPerRank: 1 },
    },
  });
  t.equal(job.status, 201, JSON.stringify(job.body));
  const jobId = job.body.id;
  // teardowns run last-registered first: this one runs while the agent and controller are up
  t.teardown(async () => {
    await c.api(`/v1/jobs/${jobId}/cancel`, { method: 'POST' });
    await waitUntil(
      'the job to end',
      20_000,
      async () => (await c.api<{ endedAt: string | null }>(`/v1/jobs/${jobId}`)).body.endedAt !== null,
    ).catch(() => {});
  });

  await t.test('signs in with the URL rankd dashboard prints', async (t) => {
    const r = await runCli(['dashboard'], c.clientEnv);
    t.equal(r.code, 0, r.stderr);
    const url = r.stdout.trim();
    await page.goto(url);
    await shown(page.getByRole('heading', { name: 'Fleet' }), pageRecord);
    t.notMatch(page.url(), /login=/, 'the code leaves the address bar');
    const cookies = await context.cookies();
    const session = cookies.find((k) => k.name === 'rankd_session');
    t.ok(session, 'a session cookie');
    t.equal(session?.httpOnly, true);
    t.equal(session?.secure, true);
    t.equal(session?.sameSite, 'Strict');
    t.equal(await page.evaluate(() => document.cookie), '', 'page scripts cannot read it');

    // the same URL again, in a fresh browser profile: the code is spent
    const other = await browser.newContext();
    const p2 = await other.newPage();
    const p2Record = recordPage(p2);
    await p2.goto(url);
    // any alert first, with room for a loaded CI machine, then its words: a failure names what it said instead
    const alert = p2.getByRole('alert').first();
    await shown(alert, p2Record, 90_000);
    t.match(await alert.textContent(), /unknown, used or expired login code/, 'the spent code is refused');
    t.ok(await p2.getByLabel('API token').isVisible(), 'the login form is offered instead');
    await other.close();
  });

  await t.test('finds the nodes with their hardware', async (t) => {
    const row = page.locator('tr[data-node="dgx1"]');
    await row.waitFor();
    const text = await row.innerText();
    t.match(text, /2 × 64 cores, 256 threads/);
    t.match(text, /8\b/, 'NUMA nodes and GPUs');
    t.match(text, /0\/8 active|8\/8 active/, 'RDMA ports');
    t.ok(await page.locator('tr[data-node="local"]').isVisible());
  });

  await t.test("draws dgx1's topology with its GPUs and HCAs in their NUMA nodes", async (t) => {
    await page.getByRole('link', { name: 'dgx1' }).click();
    const topo = page.getByTestId('topology');
    await topo.waitFor();
    t.equal(await topo.locator('.package').count(), 2, 'two packages');
    t.equal(await topo.locator('.numa').count(), 8, 'four NUMA nodes in each');
    t.equal(await topo.locator('.core').count(), 128);
    t.equal(await topo.locator('.pu').count(), 256);
    // GPUs and HCAs in PCI order, in pairs on NUMA 3, 1, 7 and 5 (machines.ts)
    const expected: [number, number][] = [
      [0, 3],
      [1, 3],
      [2, 1],
      [3, 1],
      [4, 7],
      [5, 7],
      [6, 5],
      [7, 5],
    ];
    for (const [i, numa] of expected) {
      t.equal(
        await topo.locator(`.numa[data-numa="${numa}"] [data-gpu="${i}"]`).count(),
        1,
        `GPU ${i} in NUMA ${numa}`,
      );
      t.equal(
        await topo.locator(`.numa[data-numa="${numa}"] [data-rdma="mlx5_${i}"]`).count(),
        1,
        `mlx5_${i} in NUMA ${numa}`,
      );
    }
    t.equal(await topo.locator('.numa[data-numa="6"] [data-nic="enp226s0"]').count(), 1, 'the Ethernet NIC in NUMA 6');
    t.equal(await topo.locator('.numa[data-numa="0"] .device').count(), 0, 'nothing in NUMA 0');
    await topo.locator('[data-rdma="mlx5_0"] summary').click();
    t.match(await topo.locator('[data-rdma="mlx5_0"] table.gids').innerText(), /fe80:/, 'its GID table opens');
  });

  await t.test('opens the running job: rank map over the topology and live output', async (t) => {
    await page.getByRole('link', { name: 'Jobs' }).click();
    await page.locator(`tr[data-job="${jobId}"]`).getByRole('link').click();
    await page.getByRole('heading', { name: /Job printer/ }).waitFor();
    const held = page.locator('.pu.held[data-rank="0"]');
    await held.waitFor();
    const view = await c.api<{ rankMap: { ranks: { cpus: number[] }[] } }>(`/v1/jobs/${jobId}`);
    const planned = view.body.rankMap.ranks[0]!.cpus;
    t.same(
      await held.evaluateAll((els: Element[]) => els.map((e) => Number(e.dataset['cpu']))),
      planned,
      'rank 0 is drawn on exactly its planned CPUs',
    );
    const rankRow = page.locator('table.ranks tr[data-rank="0"]');
    await waitUntil('the actual binding, verified', 15_000, async () => /✓/.test(await rankRow.innerText()));
    t.match(await rankRow.innerText(), /running/);
    await rankRow.locator('summary').click();
    t.match(await rankRow.locator('table.env').innerText(), /RANK\s+0/, "the rank's environment");
    const first = await waitUntil('log lines', 15_000, async () => {
      const n = Number(
        (await page.getByTestId('log-status').innerText()).match(/^([\d,]+) lines/)?.[1]?.replace(/,/g, ''),
      );
      return n >= 5 ? n : undefined;
    });
    await waitUntil('more log lines arriving', 15_000, async () => {
      const n = Number(
        (await page.getByTestId('log-status').innerText()).match(/^([\d,]+) lines/)?.[1]?.replace(/,/g, ''),
      );
      return n > first + 10;
    });
    t.match(await page.getByTestId('log-box').innerText(), /0: tick \d+/, 'labelled lines in view');
    t.ok((await page.locator('.log-line').count()) < 200, 'only the rows in sight are in the DOM');
    await page.getByLabel('Search').fill('tick 3');
    await waitUntil('search filters', 5000, async () =>
      (await page.locator('.log-line').allInnerTexts()).every((l) => l.includes('tick 3')),
    );
    await page.getByLabel('Search').fill('');
  });

  await t.test('a reader sees the job but may not cancel it', async (t) => {
    const reader = await runCli(['user', 'add', 'viewer', '--role', 'reader'], c.clientEnv);
    t.equal(reader.code, 0, reader.stderr);
    const token = /rankd_[A-Za-z0-9_-]{43}/.exec(reader.stdout + reader.stderr)![0];
    const ctx: BrowserContext = await browser.newContext();
    const p: Page = await ctx.newPage();
    p.setDefaultTimeout(15_000);
    const base = new URL(c.url).origin;
    await p.goto(`${base}/ui/#/jobs/${jobId}`);
    await p.getByLabel('API token').fill(token);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('heading', { name: /Job printer/ }).waitFor();
    t.equal(await p.getByRole('button', { name: 'Cancel job' }).count(), 0, 'no cancel button for a reader');
    const forced = await p.evaluate(async (id) => {
      const session = (await (await fetch('/v1/session')).json()) as { csrf: string };
      const res = await fetch(`/v1/jobs/${id}/cancel`, { method: 'POST', headers: { 'x-rankd-csrf': session.csrf } });
      return { status: res.status, body: (await res.json()) as { message: string } };
    }, jobId);
    t.equal(forced.status, 403, 'and the API refuses it');
    t.match(forced.body.message, /viewer.*reader.*may not cancel job/);
    await ctx.close();
  });

  await t.test('landmarks, labels and keyboard focus', async (t) => {
    t.equal(await page.getByRole('banner').count(), 1);
    t.equal(await page.getByRole('navigation', { name: 'Main' }).count(), 1);
    t.equal(await page.getByRole('main').count(), 1);
    const unnamed = await page.evaluate(() =>
      [...document.querySelectorAll('button, input, select, a[href]')]
        .filter((e: Element) => {
          return !(e.labels?.length || e.getAttribute('aria-label') || e.textContent?.trim());
        })
        .map((e: Element) => e.outerHTML.slice(0, 80)),
    );
    t.same(unnamed, [], 'every control has an accessible name');
    // a fresh load: focus starts at the top of the document
    await page.reload();
    await page.getByRole('heading', { name: /Job printer/ }).waitFor();
    const focused: string[] = [];
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press('Tab');
      focused.push(await page.evaluate(() => document.activeElement?.textContent?.trim() ?? ''));
    }
    t.same(focused, ['Skip to content', 'rankd', 'Fleet', 'Jobs'], 'Tab walks the skip link, then the header');
    t.equal(
      await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle),
      'solid',
      'focus is visible',
    );
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Jobs', exact: true }).waitFor();
    await page.locator(`tr[data-job="${jobId}"]`).getByRole('link').click();
    await page.getByRole('heading', { name: /Job printer/ }).waitFor();
  });

  await t.test('cancels the job from its page; the page follows it to its end', async (t) => {
    page.once('dialog', (d) => void d.accept());
    const forged = await page.evaluate(
      async (id) => (await fetch(`/v1/jobs/${id}/cancel`, { method: 'POST' })).status,
      jobId,
    );
    t.equal(forged, 403, 'without the CSRF token the cookie alone cannot cancel');
    await page.getByRole('button', { name: 'Cancel job' }).click();
    await page.locator('h1 .badge', { hasText: 'cancelled' }).waitFor();
    const after = await c.api<{ state: string }>(`/v1/jobs/${jobId}`);
    t.equal(after.body.state, 'cancelled');
    await waitUntil('the log stream ends', 15_000, async () =>
      /ended$/.test(await page.getByTestId('log-status').innerText()),
    );
    t.equal(await page.getByRole('button', { name: 'Cancel job' }).count(), 0, 'no cancel button on an ended job');
  });

  await t.test('signing out ends the session', async (t) => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API token').waitFor();
    t.equal((await context.cookies()).filter((k) => k.name === 'rankd_session').length, 0);
    const status = await page.evaluate(async () => (await fetch('/v1/nodes')).status);
    t.equal(status, 401);
  });
});

// `npm run screenshots`: the dashboard pictures in docs/img, taken from a real cluster.
//
// Starts a real controller, a real agent on this machine and three agents that read
// generated sysfs trees (an 8-GPU EPYC node, a RoCE pod node, a Sapphire Rapids node with
// E810 RoCE ports: test/helpers/machines.ts), so the fleet and topology pages show more
// than this small VM. Jobs that really run go to this machine's agent (the generated nodes'
// CPUs do not exist here): two that have ended, one that prints lines, and one waiting
// behind it, so the queue shows something. Then it signs in to the dashboard in Debian's
// Chromium with the URL `rankd dashboard` prints, as a person would, and saves one PNG per
// page at 1440×900. Everything it started is stopped by PID, its temporary files removed.
//
//   npm run screenshots          writes docs/img/dashboard-{login,fleet,node,jobs,job}.png
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import {
  runCli,
  startAgent,
  startController,
  waitForNode,
  waitUntil,
  type ControllerHandle,
  type Daemon,
} from '../test/helpers/daemons.js';
import { buildSysfs } from '../test/helpers/sysfs-fixture.js';
import { epycNps4Gpu8, seed000Spr, seed004RocePod } from '../test/helpers/machines.js';
import { browserMissing, launchChromium, spkiPin } from '../test/helpers/browser.js';

const OUT = fileURLToPath(new URL('../docs/img/', import.meta.url));
const VIEWPORT = { width: 1440, height: 900 };
/** Docs pictures should stay light in the repository; a bigger one is reported. */
const MAX_BYTES = 400 * 1024;
// what page callbacks touch runs in the browser; this project has no DOM types
type Element = any;
const ENDED = new Set(['succeeded', 'failed', 'cancelled', 'timed-out', 'lost']);

// the generated nodes: name, machine; their agents report these topologies (--root)
const GENERATED = [
  { name: 'dgx1', machine: epycNps4Gpu8(1) },
  { name: 'pod-1', machine: seed004RocePod(1) },
  { name: 'spr1', machine: seed000Spr(1) },
];
const LOCAL = 'local';

// a training-like loop: a step line every quarter second, a warning on stderr now and then
const PRINTER = [
  'sh',
  '-c',
  'i=0; while :; do l=$((2400 - i * 7 % 1900)); printf "step %d  loss %d.%03d  %s\\n" $i $((l / 1000)) $((l % 1000)) "$(date +%T)"; ' +
    '[ $((i % 15)) -eq 14 ] && echo "warning: step $i waited on the allreduce" >&2; i=$((i + 1)); sleep 0.25; done',
];

const say = (s: string) => process.stderr.write(`screenshots: ${s}\n`);

/** Everything this run started, in the order it is stopped. */
interface Cluster {
  controller: ControllerHandle;
  agents: Daemon[];
  scratch: string;
}

async function startCluster(): Promise<Cluster> {
  const scratch = mkdtempSync(join(tmpdir(), 'rankd-screenshots-'));
  // the admin is named as a person would be, for the header and the jobs' owner column
  const controller = await startController({ dataDir: join(scratch, 'controller'), extra: ['--admin', 'alice'] }).catch(
    (err: Error) => {
      rmSync(scratch, { recursive: true, force: true });
      throw err;
    },
  );
  const cluster: Cluster = { controller, agents: [], scratch };
  try {
    cluster.agents.push(startAgent(controller, { name: LOCAL, spoolDir: spool(scratch, LOCAL) }));
    for (const { name, machine } of GENERATED) {
      const root = buildSysfs(join(scratch, `sysfs-${name}`), machine);
      cluster.agents.push(startAgent(controller, { name, root, spoolDir: spool(scratch, name) }));
    }
    // generous: on a busy 2-core machine four agents reading their facts take a while
    const names = [LOCAL, ...GENERATED.map((g) => g.name)];
    for (const [i, name] of names.entries()) {
      await waitForNode(controller, name, 'ready', 90_000).catch((err: Error) => {
        throw new Error(`${err.message}; its agent said:\n${cluster.agents[i]!.output().slice(-2000)}`);
      });
    }
  } catch (err) {
    await stopCluster(cluster);
    throw err;
  }
  return cluster;
}

function spool(scratch: string, name: string): string {
  const dir = join(scratch, `spool-${name}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Ends every live job first (ranks outlive their agent by design), then the daemons, then the files. */
async function stopCluster(cluster: Cluster): Promise<void> {
  const { controller } = cluster;
  try {
    const { body } = await controller.api<{ jobs: { id: string; state: string }[] }>('/v1/jobs');
    const live = body.jobs.filter((j) => !ENDED.has(j.state));
    for (const j of live) await controller.api(`/v1/jobs/${j.id}/cancel`, { method: 'POST' });
    for (const j of live) await waitForJob(controller, j.id, (s) => ENDED.has(s), 30_000);
  } catch (err) {
    say(`could not end every job: ${(err as Error).message}`);
  }
  for (const agent of cluster.agents) await agent.stop();
  await controller.stop();
  rmSync(cluster.scratch, { recursive: true, force: true });
}

async function submit(
  controller: ControllerHandle,
  spec: { name: string; command: string[]; ranks: number },
): Promise<string> {
  const res = await controller.api<{ id: string }>('/v1/jobs', {
    method: 'POST',
    body: {
      name: spec.name,
      command: spec.command,
      placement: { nodelist: [LOCAL], ntasks: spec.ranks, cpusPerRank: 1 },
    },
  });
  if (res.status !== 201) throw new Error(`submitting ${spec.name}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id;
}

function waitForJob(
  controller: ControllerHandle,
  id: string,
  ok: (state: string) => boolean,
  timeoutMs = 30_000,
): Promise<string> {
  return waitUntil(
    `job ${id}`,
    timeoutMs,
    async () => {
      const { body } = await controller.api<{ state: string }>(`/v1/jobs/${id}`);
      return ok(body.state) ? body.state : undefined;
    },
    100,
  );
}

/** Two jobs that have ended (one well, one not), one printing, one queued behind it. */
async function startJobs(controller: ControllerHandle): Promise<{ running: string }> {
  const probe = await submit(controller, {
    name: 'binding-probe',
    command: ['sh', '-c', 'grep Cpus_allowed_list /proc/self/status'],
    ranks: 2,
  });
  await waitForJob(controller, probe, (s) => ENDED.has(s));
  const broken = await submit(controller, {
    name: 'preflight',
    command: ['sh', '-c', 'echo "checking /mnt/models"; echo "/mnt/models: not mounted" >&2; exit 3'],
    ranks: 1,
  });
  await waitForJob(controller, broken, (s) => ENDED.has(s));
  const running = await submit(controller, { name: 'train-demo', command: PRINTER, ranks: 2 });
  await waitForJob(controller, running, (s) => s === 'running');
  // it holds both of this machine's cores, so the next one waits
  const queued = await submit(controller, { name: 'eval', command: ['sh', '-c', 'echo evaluating'], ranks: 1 });
  await waitForJob(controller, queued, (s) => s === 'queued');
  return { running };
}

/**
 * One page's PNG: the viewport, the whole page (`full`), or the viewport cut just below the
 * page's content (`fit`), so a short page is not a picture of mostly empty background.
 */
async function save(page: Page, name: string, how: 'viewport' | 'full' | 'fit'): Promise<void> {
  const path = join(OUT, `dashboard-${name}.png`);
  const options = { path, animations: 'disabled', caret: 'hide' } as const;
  if (how === 'fit') {
    const bottom = await page
      .locator('main')
      .evaluate((main: Element) => main.getBoundingClientRect().bottom as number);
    const height = Math.min(VIEWPORT.height, Math.ceil(bottom) + 24);
    await page.screenshot({ ...options, clip: { x: 0, y: 0, width: VIEWPORT.width, height } });
  } else {
    await page.screenshot({ ...options, fullPage: how === 'full' });
  }
  const size = statSync(path).size;
  say(`${path} (${Math.round(size / 1024)} KB)${size > MAX_BYTES ? `: over ${MAX_BYTES / 1024} KB` : ''}`);
}

async function shoot(browser: Browser, controller: ControllerHandle, jobId: string): Promise<void> {
  const base = new URL(controller.url).origin;
  const context = await browser.newContext({ viewport: VIEWPORT, locale: 'en-GB', timezoneId: 'UTC' });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);

  // the sign-in form, as a browser without a session or a login code sees it
  await page.goto(`${base}/ui/`);
  await page.getByLabel('API token').waitFor();
  await save(page, 'login', 'fit');

  const login = await runCli(['dashboard'], controller.clientEnv);
  if (login.code !== 0) throw new Error(`rankd dashboard: ${login.stderr}`);
  // from another document: a change of fragment alone would not load the app again
  await page.goto('about:blank');
  await page.goto(login.stdout.trim());
  await page.getByRole('heading', { name: 'Fleet' }).waitFor();
  await page.locator(`tr[data-node="${GENERATED[0]!.name}"]`).waitFor();
  await waitUntil(
    'every node with its hardware',
    15_000,
    async () => !(await page.locator('table.grid').innerText()).includes('…'),
  );
  await save(page, 'fleet', 'fit');

  // the GPU node: its whole topology is several screens tall, so the first screen only
  await page.getByRole('link', { name: GENERATED[0]!.name }).click();
  await page.getByTestId('topology').waitFor();
  await save(page, 'node', 'viewport');

  await page.getByRole('link', { name: 'Jobs', exact: true }).click();
  await page.getByRole('heading', { name: 'Jobs', exact: true }).waitFor();
  await page.locator('table[aria-label="Queued jobs"]').waitFor();
  await save(page, 'jobs', 'fit');

  await page.locator(`tr[data-job="${jobId}"]`).first().getByRole('link').click();
  await page.locator('.pu.held').first().waitFor();
  await waitUntil(
    'both ranks verified',
    15_000,
    async () => (await page.locator('table.ranks').innerText()).split('✓').length - 1 >= 2,
  );
  // what was printed before the page opened is read back rank by rank; wait until a
  // screenful has arrived live, where the ranks' lines interleave as they are printed
  const lines = async () =>
    Number((await page.getByTestId('log-status').innerText()).match(/^([\d,]+) lines/)?.[1]?.replace(/,/g, ''));
  const caughtUp = await waitUntil('the output so far', 30_000, async () =>
    (await lines()) > 0 ? lines() : undefined,
  );
  await waitUntil('a screenful of live output', 30_000, async () => (await lines()) >= caughtUp + 32);
  await save(page, 'job', 'full');
  await context.close();
}

async function main(): Promise<number> {
  const missing = browserMissing();
  if (missing) {
    say(`cannot run: ${missing}`);
    return 1;
  }
  mkdirSync(OUT, { recursive: true });
  say('starting a controller and 4 agents…');
  const cluster = await startCluster();
  let browser: Browser | null = null;
  try {
    const { running } = await startJobs(cluster.controller);
    browser = await launchChromium(await spkiPin(cluster.controller.url, cluster.controller.ca));
    await shoot(browser, cluster.controller, running);
    return 0;
  } finally {
    await browser?.close();
    await stopCluster(cluster);
    say('stopped everything it started');
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    say(err.stack ?? err.message);
    process.exit(1);
  },
);

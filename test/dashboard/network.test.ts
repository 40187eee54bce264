// The dashboard's Network page in Debian's Chromium, on a stored check with a flagged link: a
// real `rankd check net` on a namespace cluster of six hosts, one of them behind a 200 Mbit/s
// token bucket on its veth (the rig of test/cluster/check-net.test.ts), then the page must
// outline and label exactly the flagged directions in the heatmap, give their figures and
// why in the cell's title, and read FLAGGED for the throttled host only.
//
// The controller listens inside its own namespace, which the root namespace cannot reach (the
// test range is an unreachable route there). The cluster harness already bridges a unix socket
// to it (startForwarder); a loopback TCP listener here relays each browser connection to that
// socket, byte for byte, so Chromium speaks TLS to the controller itself at 127.0.0.1, a name
// its serving certificate holds. Nothing leaves loopback and the namespaces.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { startCluster } from '../cluster/harness/cluster.js';
import { clusterTest } from '../cluster/harness/requirements.js';
import { browserMissing, launchChromium, spkiPin } from '../helpers/browser.js';
import { startController, type ControllerHandle } from '../helpers/daemons.js';
import type { AllreduceCheckResult, NetCheckResult } from '@rankd/protocol';
import { openDatabase } from '#controller/store/database';
import { ChecksRepo } from '#controller/checks/checks-repo';

interface Link {
  src: string;
  dst: string;
  rail: string;
  flagged: boolean;
  why: string | null;
  error: string | null;
}
interface NetCheck {
  id: string;
  by: string | null;
  flagged: string[];
  links: Link[];
  nodes: Array<{ node: string; verdict: string }>;
}

/** 127.0.0.1:<port> → the forwarder's unix socket; closed (connections too) by the returned function. */
async function loopbackRelay(socketPath: string): Promise<{ port: number; close: () => Promise<void> }> {
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(socketPath);
    open.add(client).add(upstream);
    client.pipe(upstream).on('error', () => upstream.destroy());
    upstream.pipe(client).on('error', () => client.destroy());
    const end = () => (client.destroy(), upstream.destroy(), open.delete(client), open.delete(upstream));
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}

// what page.evaluate callbacks touch runs in the browser; the test project has no DOM types
declare const getComputedStyle: (e: Element) => {
  borderTopStyle: string;
  borderTopWidth: string;
  borderTopColor: string;
};
type Element = { getAttribute(name: string): string | null };

const missing = browserMissing();
/** Where to save the pages as pictures (docs/img for the docs), or nothing. */
const SHOTS = process.env['NETWORK_SCREENSHOTS'];

const name = 'the Network page shows the flagged link of a real net check';
if (missing) void t.test(name, { skip: missing }, async () => {});
else
  clusterTest(t, name, { timeout: 300_000 }, async (t) => {
    const c = await startCluster(t, { hosts: 6 });
    const slow = c.net.hosts[5]!;
    const tbf = ['root', 'tbf', 'rate', '200mbit', 'burst', '32kbit', 'latency', '400ms'];
    execFileSync('tc', ['qdisc', 'add', 'dev', slow.veth, ...tbf]);
    t.teardown(() => {
      try {
        execFileSync('tc', ['qdisc', 'del', 'dev', slow.veth, 'root'], { stdio: 'ignore' });
      } catch {
        // the veth is gone with the network
      }
    });

    // --threshold 0.3: healthy veth links spread from about 40 % to 150 % of their median on
    // this 2-core machine, the throttled ones sit under 10 % (test/cluster/check-net.test.ts)
    const run = await c.rankd(['check', 'net', '--duration', '1', '--threshold', '0.3', '--json'], 180_000);
    t.equal(run.code, 1, `exit 1: a host is flagged; stderr: ${run.stderr}`);
    const check = JSON.parse(run.stdout) as NetCheck;
    t.same(check.flagged, [slow.name], 'the check flagged the throttled host');
    const flagged = check.links.filter((l) => l.flagged);
    t.ok(flagged.length > 0, `${flagged.length} flagged directions`);

    const relay = await loopbackRelay(c.api.socketPath);
    t.teardown(() => relay.close());
    const origin = `https://127.0.0.1:${relay.port}`;
    const browser = await launchChromium(await spkiPin(origin, c.api.ca));
    t.teardown(() => browser.close());
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(30_000);
    const login = await c.api.request<{ path: string }>('/v1/dashboard/login-codes', { method: 'POST' });
    t.equal(login.status, 201, `a login code: ${login.status === 201 ? 'minted' : login.text}`);
    await page.goto(`${origin}${login.body.path}`);
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Network' }).click();
    await page.getByRole('heading', { name: 'Network', exact: true }).waitFor();
    const summary = page.getByTestId('net-check-summary');
    await summary.waitFor();
    const text = await summary.innerText();
    t.match(text, check.id, "the check's id");
    t.match(text, `run by ${check.by ?? 'the controller'}`, 'who ran it');

    const heatmap = page.locator('table.heatmap[data-rail="tcp"]');
    t.equal(await heatmap.locator('tbody td').count(), 36, 'six rows of six cells');
    t.equal(
      await heatmap.locator('td.flagged').count(),
      flagged.length,
      'as many outlined cells as flagged directions',
    );
    for (const l of flagged) {
      const cell = heatmap.locator(`td[data-src="${l.src}"][data-dst="${l.dst}"]`);
      t.match(await cell.getAttribute('class'), /\bflagged\b/, `${l.src}→${l.dst} is outlined`);
      t.match(await cell.innerText(), l.error === null ? /SLOW/i : /FAILED/i, `${l.src}→${l.dst} is labelled`);
      const title = (await cell.getAttribute('title')) ?? '';
      t.match(title, `${l.src} → ${l.dst} on tcp`, 'its title names the link');
      t.match(title, l.why ?? '', 'and says why');
      const border = await cell.evaluate((e: Element) => {
        const css = getComputedStyle(e);
        return `${css.borderTopStyle} ${css.borderTopWidth} ${css.borderTopColor}`;
      });
      t.equal(border, 'solid 2px rgb(180, 35, 24)', 'outlined in the page’s red');
    }
    const ok = check.links.find((l) => !l.flagged)!;
    const healthy = heatmap.locator(`td[data-src="${ok.src}"][data-dst="${ok.dst}"]`);
    const healthyClass = (await healthy.getAttribute('class')) ?? '';
    t.notMatch(healthyClass, /flagged/, `${ok.src}→${ok.dst}, healthy, is not outlined`);
    t.equal(
      await healthy.evaluate((e: Element) => getComputedStyle(e).borderTopColor),
      'rgba(0, 0, 0, 0)',
      'its border is transparent',
    );

    for (const n of check.nodes) {
      const verdict = await page.locator(`table.verdicts tr[data-node="${n.node}"] td.verdict`).innerText();
      t.equal(verdict, n.node === slow.name ? 'FLAGGED' : 'ok', `${n.node}: ${verdict}`);
    }
    t.ok(await page.getByText('No allreduce sweep stored yet.').isVisible(), 'no sweep stored: the page says so');

    // the next check reaches the open page by itself: /v1/events names it, the page reads it
    const again = await c.rankd(['check', 'net', '--duration', '1', '--threshold', '0.3', '--json'], 180_000);
    const next = JSON.parse(again.stdout) as NetCheck;
    t.not(next.id, check.id, `a second check ran (exit ${again.code})`);
    await page.getByTestId('net-check-summary').filter({ hasText: next.id }).waitFor({ timeout: 15_000 });
    t.pass(`the page shows ${next.id} without a reload`);

    if (SHOTS) await page.locator('main').screenshot({ path: join(SHOTS, 'dashboard-network.png') });
  });

/**
 * A sweep of 3 ranks from 8 B to 256 MiB as `rankd check allreduce` stores it: time = 20 µs +
 * bytes at 1.2 GB/s, algbw = bytes / time, busbw = algbw × 2(n−1)/n (nccl-tests' definitions).
 */
function storedSweep(): AllreduceCheckResult {
  const rows: AllreduceCheckResult['rows'] = [];
  for (let bytes = 8; bytes <= 256 * 2 ** 20; bytes *= 2) {
    const timeUs = 20 + bytes / 1.2e3;
    const algbwGBs = bytes / timeUs / 1e3;
    rows.push({ bytes, count: bytes / 4, type: 'float', timeUs, algbwGBs, busbwGBs: (algbwGBs * 4) / 3, wrong: 0 });
  }
  const now = Date.now();
  return {
    id: 'c-sweep-sample',
    kind: 'allreduce',
    startedAt: now - 30_000,
    endedAt: now,
    by: 'admin',
    pattern: 'h1,h2,h3',
    jobId: 'j-sample',
    ranks: 3,
    nodes: ['h1', 'h2', 'h3'],
    implementation: 'rankd-mpi',
    env: { UCX_TLS: 'tcp,self' },
    rows,
    wrong: 0,
    flagged: [],
    message: null,
  };
}

/** A stored net check of n nodes on one rail where the link from → to alone is slow (and `from` flagged). */
function simulatedNetCheck(n: number, [from, to]: [string, string]): NetCheckResult {
  const names = Array.from({ length: n }, (_, i) => `n${i}`);
  const now = Date.now();
  const links: NetCheckResult['links'] = names.flatMap((src) =>
    names
      .filter((dst) => dst !== src)
      .map((dst) => {
        const slow = src === from && dst === to;
        return {
          rail: 'tcp',
          src,
          dst,
          round: 0,
          startedAt: now,
          endedAt: now,
          bandwidthBps: slow ? 1e9 : 9.4e9,
          latencyUs: 3,
          error: null,
          flagged: slow,
          why: slow ? '1.00 Gbit/s, 11 % of the tcp median 9.40 Gbit/s' : null,
        };
      }),
  );
  return {
    id: 'c-large-sample',
    kind: 'net',
    startedAt: now,
    endedAt: now + 1,
    by: 'admin',
    pattern: 'all',
    durationS: 1,
    threshold: 0.8,
    rounds: n - 1,
    roundsRun: n - 1,
    rails: [
      { name: 'tcp', kind: 'tcp', tools: ['iperf3'], medianBps: 9.4e9, thresholdBps: 7.52e9, medianLatencyUs: 3 },
    ],
    nodes: names.map((node) => ({
      node,
      verdict: node === from ? ('flagged' as const) : ('ok' as const),
      reason: node === from ? 'slow link' : null,
      bandwidth: { min: 1e9, median: 9.4e9, max: 9.4e9 },
      latencyUs: { min: 3, median: 3, max: 3 },
    })),
    links,
    flagged: [from],
    drained: [],
    message: null,
  };
}

// The sweep's route is built apart from this page (rankd check allreduce); the page reads any
// sweep the store holds. Here one is put in the controller's store through ChecksRepo (the
// controller stopped meanwhile), then the page must draw every row at its place. A simulated
// 130-node check is then stored beside the running controller (another SQLite connection, as
// the WAL allows), and Reload must show its flagged part only.
const stored = "the Network page draws the last allreduce sweep's busbw curve, and a large check's flagged part";
if (missing) void t.test(stored, { skip: missing }, async () => {});
else
  t.test(stored, async (t) => {
    const first = await startController();
    await first.stop();
    const sweep = storedSweep();
    const db = openDatabase(first.dataDir);
    new ChecksRepo(db).save(sweep, sweep.nodes.length);
    db.close();
    const c: ControllerHandle = await startController({ dataDir: first.dataDir });
    t.teardown(() => c.stop());

    const browser = await launchChromium(await spkiPin(c.url, c.ca));
    t.teardown(() => browser.close());
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(30_000);
    const login = await c.api<{ path: string }>('/v1/dashboard/login-codes', { method: 'POST' });
    t.equal(login.status, 201, 'a login code');
    await page.goto(`${new URL(c.url).origin}${login.body.path}`);
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
    await page.goto(`${new URL(c.url).origin}/ui/#/network`);
    await page.getByTestId('sweep-summary').waitFor();
    t.ok(await page.getByText('No net check stored yet').isVisible(), 'no net check stored: the page says so');
    t.match(await page.getByTestId('sweep-summary').innerText(), /3 ranks on h1, h2, h3, rankd-mpi, job j-sample/);

    const points = await page.locator('svg.busbw circle.point').evaluateAll((els: Element[]) =>
      els.map((e) => ({
        bytes: Number(e.getAttribute('data-bytes')),
        cx: Number(e.getAttribute('cx')),
        cy: Number(e.getAttribute('cy')),
      })),
    );
    t.same(
      points.map((p) => p.bytes),
      sweep.rows.map((r) => r.bytes),
      'one point per size, 8 B to 256 MiB',
    );
    const dx = points.slice(1).map((p, i) => p.cx - points[i]!.cx);
    t.ok(
      dx.every((d) => Math.abs(d - dx[0]!) < 0.2 && d > 0),
      'sizes that double are evenly spaced: a log-2 axis',
    );
    // y grows downwards: a higher busbw is drawn higher, and the ratios hold on a 0-based axis
    const base = await page.locator('svg.busbw line.axis').first().getAttribute('y1');
    const height = (p: { cy: number }) => Number(base) - p.cy;
    const last = sweep.rows.at(-1)!;
    for (const [i, r] of sweep.rows.entries())
      t.ok(
        Math.abs(height(points[i]!) / height(points.at(-1)!) - r.busbwGBs / last.busbwGBs) < 0.01,
        `${r.bytes} B at ${r.busbwGBs.toFixed(3)} GB/s`,
      );
    const title = await page.locator(`svg.busbw circle[data-bytes="${last.bytes}"] title`).textContent();
    t.match(title, `256 MiB: time ${last.timeUs.toFixed(1)} µs, algbw ${last.algbwGBs.toFixed(2)} GB/s`);
    t.match(title, `busbw ${last.busbwGBs.toFixed(2)} GB/s`);
    if (SHOTS) await page.locator('main').screenshot({ path: join(SHOTS, 'dashboard-network-sweep.png') });

    // a check past 128 nodes: the heatmap keeps to the nodes of its flagged link, the table has every node
    const large = simulatedNetCheck(130, ['n7', 'n42']);
    const live = openDatabase(c.dataDir);
    new ChecksRepo(live).save(large, 130);
    live.close();
    await page.getByRole('button', { name: 'Reload' }).click();
    const note = page.getByTestId('heatmap-note');
    await note.waitFor();
    t.match(
      await note.innerText(),
      '130 nodes, more than 128: the heatmap shows the 2 nodes with a flagged verdict or link',
    );
    const rows = await page.locator('table.heatmap tbody th').allInnerTexts();
    t.same(rows, ['n7', 'n42'], 'its rows: the two nodes of the flagged link');
    t.match(await page.locator('table.heatmap td[data-src="n7"][data-dst="n42"]').getAttribute('class'), /flagged/);
    t.equal(await page.locator('table.verdicts tbody tr').count(), 130, 'the verdict table has every node');
  });

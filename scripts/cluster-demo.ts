// `npm run cluster`: a real cluster in this machine, for people to watch.
//
// Builds hosts as network namespaces (test/cluster/harness, the guarded recipe of
// shared/docs/recipes.md), starts a controller and one agent per host, and runs seed 002's
// DDP demo across them with `rankd run`, its labelled output streamed here. Then it tears
// everything down; with --hold it first waits for Ctrl-C, so that the cluster can be used
// by hand. Needs root and iproute2; the DDP demo needs Debian's python3-torch.
//
//   npm run cluster                       3 hosts × 2 ranks, the DDP demo, teardown
//   npm run cluster -- --hosts 4          more hosts
//   npm run cluster -- --cut host3        cut host3's link mid-training and watch rankd fail the job fast
//   npm run cluster -- --hold             keep the cluster up until Ctrl-C
import { parseArgs } from 'node:util';
import { processAlive } from '../test/helpers/cluster.js';
import { Cluster, CLI } from '../test/cluster/harness/cluster.js';
import { DDP_DEMO, PYTHON, parseDemo } from '../test/cluster/harness/ddp-output.js';
import { splitLabelled } from '../test/cluster/harness/labelled.js';
import { clusterUnsupported, torchUnsupported } from '../test/cluster/harness/requirements.js';
import { waitFor } from '../test/cluster/harness/wait.js';

const { values: opts } = parseArgs({
  options: {
    hosts: { type: 'string', default: '3' },
    'ranks-per-node': { type: 'string', default: '2' },
    cut: { type: 'string' },
    hold: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

const say = (s: string) => process.stderr.write(`cluster: ${s}\n`);

async function main(): Promise<number> {
  if (opts.help) {
    process.stdout.write('usage: npm run cluster -- [--hosts N] [--ranks-per-node N] [--cut hostN] [--hold]\n');
    return 0;
  }
  const why = clusterUnsupported() ?? torchUnsupported();
  if (why) {
    say(`cannot run here: ${why}`);
    return 1;
  }
  const hosts = Number(opts.hosts);
  const perNode = Number(opts['ranks-per-node']);
  say(`building ${hosts} hosts…`);
  const c = await Cluster.start({ hosts });
  try {
    say(`network ${c.net.cidr} on bridge ${c.net.bridge} (no address), guard route in place`);
    say(`controller  ${c.net.controller.netns}  ${c.controllerUrl}  pid ${c.controller.pid}`);
    for (const a of c.agents)
      say(`${a.name.padEnd(10)}  ${a.host.netns}  ${a.host.address}  agent pid ${a.process.pid}`);

    const iterations = opts.cut ? ['--iterations', '100000', '--sleep', '0.1'] : [];
    const run = c.spawnRankd([
      'run',
      '-N',
      String(hosts),
      '--ranks-per-node',
      String(perNode),
      '--grace',
      '3',
      '--',
      PYTHON,
      DDP_DEMO,
      ...iterations,
    ]);
    run.child.stdout!.on('data', (d: string) => process.stdout.write(d));
    run.child.stderr!.on('data', (d: string) => process.stderr.write(d));
    if (opts.cut) {
      const victim = c.agent(opts.cut);
      await waitFor(
        'the job to train',
        180_000,
        () => (run.stdout().match(/ iter /g) ?? []).length >= hosts * perNode * 3,
      );
      say(`cutting ${victim.name}'s link (ip -n ${victim.host.netns} link set eth0 down)`);
      c.cut(victim.name);
    }
    const exit = await run.exited;
    say(`rankd run exited ${exit.code ?? exit.signal}`);
    const digests = new Set(
      [...splitLabelled(run.stdout()).byRank.values()].map((lines) => parseDemo(lines).params?.digest).filter(Boolean),
    );
    if (!opts.cut)
      say(
        digests.size === 1
          ? `all ${hosts * perNode} ranks ended with the same parameters (${[...digests][0]!.slice(0, 16)}…)`
          : `the ranks disagree: ${digests.size} different parameter sets`,
      );
    if (opts.cut) {
      const [summary] = await c.jobs();
      const job = await c.job(summary!.id);
      say(`the controller ended the job: ${job.state}: ${job.reason}`);
      const stranded = job.ranks.filter((r) => r.node === opts.cut && r.pid !== null);
      say(
        `waiting for ${opts.cut}'s agent, still cut off, to end its ${stranded.length} ranks when its lease runs out…`,
      );
      await waitFor('the lease', 120_000, () => stranded.every((r) => !processAlive(r.pid!)));
      c.restore(opts.cut);
      say(`restored ${opts.cut}'s link; its agent reconnects and reports`);
      await c.waitForNode(opts.cut, 'ready', 60_000);
    }
    const left = c.leftovers();
    say(
      left.length === 0
        ? 'no process of the job remains in any namespace'
        : `left behind: ${left.map((l) => `${l.pid} ${l.cmdline}`).join('; ')}`,
    );

    if (opts.hold) {
      say('holding the cluster; Ctrl-C tears it down. Use it from its controller namespace:');
      say(
        `  RANKD_URL=${c.controllerUrl} RANKD_TOKEN=${c.api.apiToken} ip netns exec ${c.net.controller.netns} node ${CLI} nodes`,
      );
      // the harness's own SIGINT handler tears everything down and exits
      await new Promise<void>(() => setInterval(() => {}, 1 << 30));
    }
    return exit.code ?? 1;
  } finally {
    say('tearing down');
    await c.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    say(`failed: ${err.stack ?? err.message}`);
    process.exit(1);
  },
);

// The harness itself: the guarded recipe, per-run names, link cuts, and a teardown that
// runs on success, on failure, on SIGINT/SIGTERM of the test process, and — for a process
// killed outright — at the next run.
import t, { type Test } from 'tap';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { ip, ipQuiet, netnsPids } from './harness/commands.js';
import { createNetwork, sweepStaleRuns, type Namespace, type Network } from './harness/network.js';
import { spawnInNetns } from './harness/ns-process.js';
import { clusterTest } from './harness/requirements.js';
import { heldByChild } from './harness/held-child.js';
import { waitFor } from './harness/wait.js';
import { processAlive } from '../helpers/cluster.js';

const HOLD = fileURLToPath(new URL('./harness/hold-network.ts', import.meta.url));

interface Held {
  cidr: string;
  bridge: string;
  netns: string[];
  veths: string[];
  sleeper: number;
}

function netnsNames(): string[] {
  return ip('netns', 'list')
    .split('\n')
    .map((l) => l.split(' ')[0]!)
    .filter(Boolean);
}

function linkExists(name: string): boolean {
  return ipQuiet('link', 'show', name);
}

function routeExists(cidr: string): boolean {
  return ip('route', 'show', cidr).includes('unreachable');
}

/** Alive and not a zombie (an orphan killed just now waits for init to reap it). */
const alive = processAlive;

function assertGone(t: Test, held: Held): void {
  const names = netnsNames();
  for (const ns of held.netns) t.notOk(names.includes(ns), `namespace ${ns} is gone`);
  for (const veth of held.veths) t.notOk(linkExists(veth), `veth ${veth} is gone`);
  t.notOk(linkExists(held.bridge), `bridge ${held.bridge} is gone`);
  t.notOk(routeExists(held.cidr), `guard route ${held.cidr} is gone`);
}

/** `node -e` in a namespace: connects to addr:port and says "connected" or the error code. */
async function tryConnect(from: Namespace, address: string, port: number): Promise<string> {
  const script = `const s = require('net').connect(${port}, '${address}');
s.setTimeout(3000, () => { console.log('ETIMEDOUT'); process.exit(0); });
s.on('connect', () => { console.log('connected'); process.exit(0); });
s.on('error', (e) => { console.log(e.code); process.exit(0); });`;
  const p = spawnInNetns(from.netns, [process.execPath, '-e', script]);
  await p.exited;
  return p.stdout().trim();
}

/** A TCP listener inside a namespace; resolves once it listens. */
async function listenIn(ns: Namespace, port: number) {
  const p = spawnInNetns(ns.netns, [
    process.execPath,
    '-e',
    `require('net').createServer((c) => c.end()).listen(${port}, '${ns.address}', () => console.log('listening'))`,
  ]);
  await waitFor('the listener', 30_000, () => {
    if (!p.running()) throw new Error(p.output());
    return p.stdout().includes('listening');
  });
  return p;
}

/** hold-network.ts: a network of 2 hosts with a process in one, in a process of its own. */
function hold(t: Test): ReturnType<typeof heldByChild<Held>> {
  return heldByChild<Held>(t, HOLD, ['--hold', '2']);
}

clusterTest(t, 'a network follows the guarded recipe', { timeout: 120_000 }, async (t) => {
  const nw: Network = createNetwork(2);
  t.teardown(nw.teardown);
  t.match(nw.cidr, /^10\.77\.\d{1,3}\.0\/24$/);
  t.ok(routeExists(nw.cidr), 'the root namespace has the unreachable guard route');
  t.notMatch(ip('-4', 'addr', 'show', 'dev', nw.bridge), /inet /, 'the bridge has no address');
  for (const ns of [nw.controller, ...nw.hosts]) {
    t.equal(ip('-n', ns.netns, 'route', 'show', 'default').trim(), '', `${ns.netns} has no default route`);
    t.match(
      ip('-n', ns.netns, '-4', 'addr', 'show', 'dev', 'eth0'),
      new RegExp(`inet ${ns.address.replace(/\./g, '\\.')}/24`),
      `${ns.netns} has ${ns.address} on eth0`,
    );
  }

  // from the root namespace the test range fails locally, whatever listens in it
  const [h1, h2] = nw.hosts as [Namespace, Namespace];
  const listener = await listenIn(h1, 7001);
  t.teardown(() => listener.stop('SIGKILL'));
  const fromRoot = await new Promise<string>((resolve) => {
    const s = net.connect(7001, h1.address);
    s.setTimeout(3000, () => resolve('ETIMEDOUT'));
    s.on('connect', () => resolve('connected'));
    s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
  t.match(fromRoot, /^E(HOST|NET)UNREACH$/, 'the root namespace cannot reach a host');
  t.equal(await tryConnect(h2, h1.address, 7001), 'connected', 'host2 reaches host1 over the bridge');
  // by now the kernel would have given an IPv6 link-local address to any root-namespace
  // link left to generate one
  for (const link of [nw.bridge, ...[nw.controller, ...nw.hosts].map((n) => n.veth)])
    t.notMatch(ip('addr', 'show', 'dev', link), /inet/, `${link} has no address, IPv4 or IPv6`);

  nw.cut(h1);
  t.notOk(nw.linkUp(h1), 'the cut host has its link down');
  t.match(await tryConnect(h1, h2.address, 7001), /^E(NET|HOST)UNREACH$/, 'the cut host reaches nobody');
  nw.restore(h1);
  t.ok(nw.linkUp(h1));
  t.equal(await tryConnect(h2, h1.address, 7001), 'connected', 'the restored host is reachable again');
});

clusterTest(
  t,
  'two runs at once get their own subnet and names; teardown removes everything',
  { timeout: 60_000 },
  async (t) => {
    const a = createNetwork(1);
    const b = createNetwork(1);
    t.not(a.subnet, b.subnet);
    t.not(a.bridge, b.bridge);
    t.not(a.hosts[0]!.netns, b.hosts[0]!.netns);
    t.not(a.hosts[0]!.veth, b.hosts[0]!.veth);
    for (const nw of [a, b]) {
      const held: Held = {
        cidr: nw.cidr,
        bridge: nw.bridge,
        netns: [nw.controller, ...nw.hosts].map((n) => n.netns),
        veths: [nw.controller, ...nw.hosts].map((n) => n.veth),
        sleeper: 0,
      };
      nw.teardown();
      nw.teardown(); // twice is harmless
      assertGone(t, held);
    }
  },
);

// SIGALRM is how tap ends a test file that overran its timeout
const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143, SIGALRM: 142 } as const;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGALRM'] as const) {
  clusterTest(t, `${signal} to the test process tears everything down`, { timeout: 60_000 }, async (t) => {
    const { child, held } = await hold(t);
    t.ok(routeExists(held.cidr) && netnsNames().includes(held.netns[1]!), 'the network exists');
    t.ok(alive(held.sleeper), 'a process runs in a host');
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill(signal);
    t.equal(await exited, SIGNAL_EXIT[signal], 'the process ends as the signal would have ended it');
    await waitFor('the process in the host to end', 10_000, () => !alive(held.sleeper));
    t.pass('the process in the host was ended by pid');
    assertGone(t, held);
  });
}

clusterTest(
  t,
  'a SIGKILLed test process: its daemons die with it, and the next run removes its network',
  { timeout: 60_000 },
  async (t) => {
    const { child, held } = await hold(t);
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    await waitFor('the daemon to die with its parent (PDEATHSIG)', 10_000, () => !alive(held.sleeper));
    t.ok(routeExists(held.cidr), 'nothing ran at the kill: the network is still there');
    await waitFor('the namespaces to empty', 10_000, () => held.netns.every((ns) => netnsPids(ns).length === 0));
    sweepStaleRuns();
    assertGone(t, held);
  },
);

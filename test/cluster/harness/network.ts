// Hosts as network namespaces on one bridge, after shared/docs/recipes.md:
//
//   1. `ip route add unreachable 10.77.<n>.0/24` in the root namespace, before anything
//      else: a packet for the test range that nothing local answers fails here instead
//      of leaving the machine by the default route. Adding it is also how a run claims
//      <n>: the kernel refuses a second identical route, so two runs never share a subnet.
//   2. a bridge with no address (the root namespace stays outside the test network);
//   3. per host a namespace, and a veth pair whose inner end is eth0 with one address;
//      the bridge and the root-namespace ends are set `addrgenmode none` before they go
//      up, so the kernel gives them no IPv6 link-local address either. Every address that
//      comes and goes in the root namespace is a network change to the processes there:
//      Chromium then fails what it has in flight with net::ERR_NETWORK_CHANGED, so any
//      cluster coming up beside a dashboard test could break its page loads;
//      namespaces get no default route, so nothing in them can leave the machine;
//   4. teardown: veths first (deleting only the namespace leaves the veth for up to a
//      second), then the namespaces, the bridge, and the guard route last.
//
// Names carry <n> and the owner's pid (rkc<n>-<pid>-h1 …): a run whose process was
// SIGKILLed, so that not even its exit handler ran, is recognised by the next run and
// its network objects are removed.
import { CommandError, ip, ipQuiet, netnsPids } from './commands.js';
import { registerCleanup } from './teardown.js';
import { processAlive } from '../../helpers/cluster.js';

export const TEST_RANGE_PREFIX = '10.77';
/** The controller's namespace gets this last octet; hosts get 1…K. */
export const CONTROLLER_OCTET = 254;

export interface Namespace {
  /** Node name for hosts (host1…), "controller" for the controller's namespace. */
  name: string;
  netns: string;
  /** Root-namespace end of the veth pair (its inner end is always eth0). */
  veth: string;
  address: string;
}

export interface Network {
  /** <n> of 10.77.<n>.0/24. */
  subnet: number;
  cidr: string;
  bridge: string;
  controller: Namespace;
  hosts: Namespace[];
  /** Takes the host's eth0 down: its traffic stops as if its cable were pulled. */
  cut(host: Namespace): void;
  restore(host: Namespace): void;
  linkUp(host: Namespace): boolean;
  /** Removes everything, in the recipe's order; safe to call twice. */
  teardown(): void;
}

const NAME_RE = /^rkc(\d{1,3})-(\d+)-(ctl|h\d+)$/;

export function createNetwork(hostCount: number): Network {
  if (!Number.isInteger(hostCount) || hostCount < 1 || hostCount > 200)
    throw new Error(`host count ${hostCount} is out of range 1…200`);
  sweepStaleRuns();
  const subnet = claimSubnet();
  const cidr = `${TEST_RANGE_PREFIX}.${subnet}.0/24`;
  const tag = `rkc${subnet}`;
  const bridge = `${tag}br`;
  const ns = (suffix: string, octet: number, index: number, name: string): Namespace => ({
    name,
    netns: `${tag}-${process.pid}-${suffix}`,
    veth: `${tag}v${index}`,
    address: `${TEST_RANGE_PREFIX}.${subnet}.${octet}`,
  });
  const controller = ns('ctl', CONTROLLER_OCTET, 0, 'controller');
  const hosts = Array.from({ length: hostCount }, (_, i) => ns(`h${i + 1}`, i + 1, i + 1, `host${i + 1}`));
  const all = [controller, ...hosts];

  let torn = false;
  const teardown = (): void => {
    if (torn) return;
    torn = true;
    // whatever still runs in our namespaces was started there by this run
    for (const n of all) for (const pid of netnsPids(n.netns)) killQuiet(pid);
    for (const n of all) ipQuiet('link', 'del', n.veth);
    for (const n of all) ipQuiet('netns', 'del', n.netns);
    ipQuiet('link', 'del', bridge);
    ipQuiet('route', 'del', 'unreachable', cidr);
  };
  const unregister = registerCleanup(`network ${cidr}`, teardown);

  try {
    ip('link', 'add', bridge, 'type', 'bridge');
    ip('link', 'set', bridge, 'addrgenmode', 'none');
    ip('link', 'set', bridge, 'up');
    for (const n of all) {
      ip('netns', 'add', n.netns);
      ip('link', 'add', n.veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', n.netns);
      ip('link', 'set', n.veth, 'addrgenmode', 'none');
      ip('link', 'set', n.veth, 'master', bridge);
      ip('link', 'set', n.veth, 'up');
      ip('-n', n.netns, 'addr', 'add', `${n.address}/24`, 'dev', 'eth0');
      ip('-n', n.netns, 'link', 'set', 'eth0', 'up');
      ip('-n', n.netns, 'link', 'set', 'lo', 'up');
    }
  } catch (err) {
    unregister();
    throw err;
  }

  return {
    subnet,
    cidr,
    bridge,
    controller,
    hosts,
    cut: (host) => void ip('-n', host.netns, 'link', 'set', 'eth0', 'down'),
    restore: (host) => void ip('-n', host.netns, 'link', 'set', 'eth0', 'up'),
    linkUp: (host) => /[<,]UP[,>]/.test(ip('-n', host.netns, 'link', 'show', 'eth0')),
    teardown: unregister,
  };
}

/** Claims a free 10.77.<n>.0/24 by adding its guard route; tries random <n> so parallel runs rarely meet. */
function claimSubnet(): number {
  const start = 1 + Math.floor(Math.random() * 253);
  for (let i = 0; i < 253; i++) {
    const n = 1 + ((start - 1 + i) % 253);
    try {
      ip('route', 'add', 'unreachable', `${TEST_RANGE_PREFIX}.${n}.0/24`);
      return n;
    } catch (err) {
      if (err instanceof CommandError && /File exists/i.test(err.stderr)) continue;
      throw err;
    }
  }
  throw new Error(`no free subnet in ${TEST_RANGE_PREFIX}.1-253.0/24: every one has a route (stale runs?)`);
}

/**
 * Removes the network objects of runs whose process is gone. Only objects named by this
 * harness, only when their owner pid is dead, and never a process: a namespace that still
 * holds processes is left alone (its daemons die with their parent through PDEATHSIG).
 */
export function sweepStaleRuns(): void {
  let names: string[];
  try {
    names = ip('netns', 'list')
      .split('\n')
      .map((l) => l.split(' ')[0]!)
      .filter(Boolean);
  } catch {
    return;
  }
  const stale = new Map<number, string[]>();
  for (const name of names) {
    const m = NAME_RE.exec(name);
    if (!m || processAlive(Number(m[2]))) continue;
    const subnet = Number(m[1]);
    stale.set(subnet, [...(stale.get(subnet) ?? []), name]);
  }
  for (const [subnet, namespaces] of stale) {
    if (namespaces.some((n) => netnsPids(n).length > 0)) continue;
    const tag = `rkc${subnet}`;
    for (const n of namespaces) {
      const index = n.endsWith('-ctl') ? 0 : Number(n.slice(n.lastIndexOf('-h') + 2));
      ipQuiet('link', 'del', `${tag}v${index}`);
      ipQuiet('netns', 'del', n);
    }
    ipQuiet('link', 'del', `${tag}br`);
    ipQuiet('route', 'del', 'unreachable', `${TEST_RANGE_PREFIX}.${subnet}.0/24`);
  }
}

function killQuiet(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

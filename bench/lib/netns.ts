// Hosts as network namespaces on one bridge, for the figures that need several hosts on
// this machine, after shared/docs/recipes.md and test/cluster/harness/network.ts (which the
// bench cannot import: it is built from bench/ alone):
//
//   1. `ip route add unreachable 10.77.<n>.0/24` in the root namespace before anything
//      else, so a packet for the range that nothing local answers fails here instead of
//      leaving by the default route. The kernel refuses a second identical route, so adding
//      it is also how a run claims <n>: the bench and the cluster tests never share a subnet;
//   2. a bridge with no address (the root namespace stays outside the test network);
//   3. per namespace a veth pair whose inner end is eth0 with one address, and no default
//      route, so nothing inside can leave the machine;
//   4. teardown: what still runs inside (started here) by pid, veths, namespaces, bridge,
//      and the guard route last. It runs at the figure's end, on Ctrl-C, and on exit.
//
// Names carry "rkb", <n> and the bench's pid, apart from the tests' "rkc" names.
import { execFileSync, spawn } from 'node:child_process';
import { startDaemon, type Daemon } from './child.js';
import { onTeardown } from './teardown.js';
import { which } from './which.js';

export const RANGE_PREFIX = '10.77';
const COMMAND_TIMEOUT_MS = 10_000;

export interface Namespace {
  /** "controller", or host1…hostK (the node names). */
  name: string;
  netns: string;
  veth: string;
  address: string;
}

export interface HostNetwork {
  cidr: string;
  controller: Namespace;
  hosts: Namespace[];
  /** A long-running process inside `ns`, by pid (setpriv --pdeathsig KILL: it dies with the bench). */
  startIn(
    ns: Namespace,
    name: string,
    argv: readonly string[],
    opts: { logFile: string; env?: NodeJS.ProcessEnv },
  ): Daemon;
  /** The argv that runs `argv` inside `ns`, for callers that time the process themselves (lib/process-timing.ts). */
  argvIn(ns: Namespace, argv: readonly string[]): string[];
  /** Runs `argv` inside `ns` to its end (bounded by timeoutMs) and returns its stdout; throws with its stderr. */
  runIn(ns: Namespace, argv: readonly string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<string>;
  /** Removes everything, in the recipe's order; safe to call twice. */
  teardown(): Promise<void>;
}

/** null when namespaces can be made here, else why not. */
export function whyNoNamespaces(): string | null {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  if (!which('ip')) return '`ip` (iproute2) is not installed';
  try {
    ip('netns', 'list');
  } catch (err) {
    return `\`ip netns\` does not work here: ${(err as Error).message}`;
  }
  return null;
}

export function createHostNetwork(hostCount: number): HostNetwork {
  const subnet = claimSubnet();
  const cidr = `${RANGE_PREFIX}.${subnet}.0/24`;
  const tag = `rkb${subnet}`;
  const bridge = `${tag}br`;
  const ns = (suffix: string, octet: number, index: number, name: string): Namespace => ({
    name,
    netns: `${tag}-${process.pid}-${suffix}`,
    veth: `${tag}v${index}`,
    address: `${RANGE_PREFIX}.${subnet}.${octet}`,
  });
  const controller = ns('ctl', 254, 0, 'controller');
  const hosts = Array.from({ length: hostCount }, (_, i) => ns(`h${i + 1}`, i + 1, i + 1, `host${i + 1}`));
  const all = [controller, ...hosts];
  const daemons: Daemon[] = [];

  let removed = false;
  const remove = (): void => {
    if (removed) return;
    removed = true;
    // whatever still runs inside was started there by this run: by pid, never by name
    for (const n of all) for (const pid of netnsPids(n.netns)) signal(pid, 'SIGKILL');
    for (const n of all) ipQuiet('link', 'del', n.veth);
    for (const n of all) ipQuiet('netns', 'del', n.netns);
    ipQuiet('link', 'del', bridge);
    ipQuiet('route', 'del', 'unreachable', cidr);
  };
  // the last resort when the bench exits without its teardown (an uncaught error): synchronous
  process.once('exit', remove);
  const untrack = onTeardown(`network namespaces ${cidr}`, async () => {
    await Promise.all(daemons.map((d) => d.stop(3000)));
    remove();
    process.removeListener('exit', remove);
  });
  try {
    // no IPv6 link-local addresses in the root namespace either: each one is a network
    // change to every process there (Chromium fails its requests in flight)
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
    void untrack();
    throw err;
  }
  const setpriv = which('setpriv');
  const inNs = (n: Namespace, argv: readonly string[]) => [
    ...(setpriv ? [setpriv, '--pdeathsig', 'KILL'] : []),
    'ip',
    'netns',
    'exec',
    n.netns,
    ...argv,
  ];
  return {
    cidr,
    controller,
    hosts,
    startIn(n, name, argv, opts) {
      // setpriv and `ip netns exec` exec in turn: the pid is the program's own
      const daemon = startDaemon(name, inNs(n, argv), opts);
      daemons.push(daemon);
      return daemon;
    },
    argvIn: inNs,
    runIn: (n, argv, opts) => runBounded(inNs(n, argv), opts),
    teardown: untrack,
  };
}

function runBounded(argv: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...opts.env },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.pid && signal(child.pid, 'SIGKILL'), opts.timeoutMs);
    child.once('error', reject);
    child.once('exit', (code, sig) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${argv.slice(-3).join(' ')}: exit ${code ?? sig}: ${err.trim().slice(-500)}`));
    });
  });
}

/** Claims a free 10.77.<n>.0/24 by adding its guard route, from a random start so parallel runs rarely meet. */
function claimSubnet(): number {
  const start = 1 + Math.floor(Math.random() * 253);
  for (let i = 0; i < 253; i++) {
    const n = 1 + ((start - 1 + i) % 253);
    try {
      ip('route', 'add', 'unreachable', `${RANGE_PREFIX}.${n}.0/24`);
      return n;
    } catch (err) {
      if (/File exists/i.test((err as Error).message)) continue;
      throw err;
    }
  }
  throw new Error(`no free subnet in ${RANGE_PREFIX}.1-253.0/24: every one has a route`);
}

function ip(...args: string[]): string {
  try {
    return execFileSync('ip', args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: COMMAND_TIMEOUT_MS,
    });
  } catch (err) {
    const e = err as { stderr?: string | Buffer; message: string };
    throw new Error(`ip ${args.join(' ')}: ${(e.stderr ? e.stderr.toString() : e.message).trim()}`, { cause: err });
  }
}

function ipQuiet(...args: string[]): void {
  try {
    ip(...args);
  } catch {
    // already gone
  }
}

function netnsPids(netns: string): number[] {
  try {
    return ip('netns', 'pids', netns)
      .split('\n')
      .filter((l) => /^\d+$/.test(l.trim()))
      .map(Number);
  } catch {
    return [];
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

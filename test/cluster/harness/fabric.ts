// What the `rankd check net` tests do to a cluster's fabric and look for in it: a token
// bucket on a host's link, the probe programs running in any namespace, listeners that hold
// the probe ports, and an `iperf3` that takes a connection and then never says a word.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import type { Cluster, Leftover } from './cluster.js';
import { netnsPids } from './commands.js';
import type { Namespace } from './network.js';
import { spawnInNetns, type NsProcess } from './ns-process.js';
import { registerCleanup } from './teardown.js';
import { waitFor } from './wait.js';

/** The programs an agent starts for a probe, as /proc/PID/comm names them. */
export const PROBE_PROGRAMS = ['iperf3', 'ib_write_bw', 'ib_write_lat'];

/** The controller's first offered probe port (PortOffer in checks/pair-probe.ts) and its window. */
export const FIRST_PROBE_PORT = 29600;
export const PORTS_PER_PROBE = 8;

/** `tc qdisc … tbf rate RATE` on the host's end of a veth; removed by the test's teardown. */
export function throttle(t: Test, veth: string, rate: string): void {
  shape(t, [], veth, rate);
}

/**
 * The same bucket at both ends of a host's link: its veth in the root namespace (what is sent
 * to it) and its eth0 (what it sends). A check that measures some directions only may measure
 * the host's own sending, which the root end alone slows only through its ACKs (to 22-25 % of
 * the median, seen in test/cluster/preflight.test.ts).
 */
export function throttleBothEnds(t: Test, host: Namespace, rate: string): void {
  shape(t, [], host.veth, rate);
  shape(t, ['ip', 'netns', 'exec', host.netns], 'eth0', rate);
}

/** `tc` on `dev`, run through `via` (a namespace's `ip netns exec`) when given. */
function shape(t: Test, via: string[], dev: string, rate: string): void {
  const [command, ...before] = [...via, 'tc'];
  const tc = (...args: string[]) => execFileSync(command, [...before, ...args], { stdio: 'pipe' });
  tc('qdisc', 'add', 'dev', dev, 'root', 'tbf', 'rate', rate, 'burst', '32kbit', 'latency', '400ms');
  t.teardown(() => {
    try {
      tc('qdisc', 'del', 'dev', dev, 'root');
    } catch {
      // the link is gone with the network
    }
  });
}

/**
 * Raises every agent's CPU priority (nice −10); the probe programs it starts inherit it. The
 * hosts of a namespace cluster share two CPUs with the rest of the machine, and TCP over veth
 * is bound by the CPU: on a loaded machine (load average 20) a healthy link starved by other
 * processes measured 155 Mbit/s, under a 200 Mbit/s throttled one. A real node's probes have
 * their NICs to themselves; here they get the CPUs first instead.
 */
export function probesFirst(c: Cluster): void {
  for (const a of c.agents) execFileSync('renice', ['-n', '-10', '-p', String(a.process.pid)], { stdio: 'ignore' });
}

/** Probe programs running in the cluster's host namespaces, whoever started them. */
export function probeProcesses(c: Cluster): Leftover[] {
  const found: Leftover[] = [];
  for (const host of c.net.hosts) {
    for (const pid of netnsPids(host.netns)) {
      try {
        const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
        if (!PROBE_PROGRAMS.includes(comm)) continue;
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
        found.push({ netns: host.netns, pid, cmdline });
      } catch {
        // gone meanwhile
      }
    }
  }
  return found;
}

/** Whether `port` is in LISTEN state in the network namespace of process `pid` (its /proc/PID/net/tcp). */
export function listensIn(pid: number, port: number): boolean {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  try {
    return readFileSync(`/proc/${pid}/net/tcp`, 'utf8')
      .split('\n')
      .some((line) => {
        const cols = line.trim().split(/\s+/);
        return cols[3] === '0A' && cols[1]?.endsWith(hex) === true;
      });
  } catch {
    return false;
  }
}

const SQUATTER = `
const net = require('node:net');
const ports = process.argv.slice(1).map(Number);
let listening = 0;
for (const port of ports) {
  const server = net.createServer((socket) => {
    process.stdout.write('accepted ' + port + '\\n');
    socket.destroy();
  });
  server.on('error', (err) => {
    process.stdout.write('failed ' + port + ' ' + err.code + '\\n');
    process.exit(1);
  });
  server.listen({ port, host: '0.0.0.0' }, () => {
    if (++listening === ports.length) process.stdout.write('listening\\n');
  });
}
`;

export interface PortSquatter {
  process: NsProcess;
  /** Connections it accepted: a probe that used a taken port would show here. */
  accepted(): number[];
}

/** A process of the test's own in `netns` holding `ports` in LISTEN; resolves once they all listen. */
export async function squatPorts(netns: string, ports: number[]): Promise<PortSquatter> {
  const proc = spawnInNetns(netns, [process.execPath, '-e', SQUATTER, ...ports.map(String)]);
  await waitFor(`the squatter in ${netns} to listen on ${ports.join(', ')}`, 10_000, () => {
    if (!proc.running()) throw new Error(`the squatter exited: ${proc.output()}`);
    return proc.stdout().includes('listening\n');
  });
  return {
    process: proc,
    accepted: () => [...proc.stdout().matchAll(/^accepted (\d+)$/gm)].map((m) => Number(m[1])),
  };
}

// As a server it listens where it is told and takes every connection, then never speaks
// iperf3's protocol; as a client it connects and stays silent. Either way the real iperf3
// on the other end waits for ever, and so does this one, until the agent ends the probe.
const HANGING_IPERF3 = `#!${process.execPath}
const net = require('node:net');
const args = process.argv.slice(2);
const arg = (flag) => { const i = args.indexOf(flag); return i < 0 ? undefined : args[i + 1]; };
const held = [];
if (args.includes('-s')) {
  net.createServer((socket) => held.push(socket)).listen({ port: Number(arg('-p')), host: arg('-B') });
} else {
  const socket = net.connect({ port: Number(arg('-p')), host: arg('-c') });
  socket.on('error', () => {});
  held.push(socket);
}
setInterval(() => {}, 1 << 30);
`;

/**
 * A directory holding only a fake `iperf3` (see above), for the front of one agent's PATH.
 * The probes run as nobody, so the directory and the program are world-readable.
 */
export function hangingIperf3Dir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-hanging-iperf3-'));
  const remove = registerCleanup(`fake iperf3 ${dir}`, () => rmSync(dir, { recursive: true, force: true }));
  t.teardown(remove);
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, 'iperf3'), HANGING_IPERF3, { mode: 0o755 });
  return dir;
}

// A process that builds a network, starts a process in one of its hosts, prints what it
// made, and waits to be interrupted: harness.test.ts sends it SIGINT, SIGTERM or SIGKILL
// and checks that nothing is left. Not a test file (tap runs *.test.ts only).
import { createNetwork } from './network.js';
import { readlinkSync } from 'node:fs';
import { spawnInNetns } from './ns-process.js';

function isSleep(pid: number): boolean {
  try {
    return readlinkSync(`/proc/${pid}/exe`).endsWith('/sleep');
  } catch {
    return false;
  }
}

// tap, run on the whole folder, would start this too: without its flag it does nothing
if (process.argv[2] !== '--hold') {
  process.stdout.write('hold-network: a helper of harness.test.ts, not a test (run with --hold HOSTS)\n');
  process.exit(0);
}
const hosts = Number(process.argv[3] ?? 2);
const net = createNetwork(hosts);
const sleeper = spawnInNetns(net.hosts[0]!.netns, ['sleep', '300']);
// setpriv asks for PDEATHSIG only once it runs: a parent killed before that leaves the
// sleeper an orphan for good. Say what was made only once the sleeper is sleep itself.
const deadline = Date.now() + 10_000;
while (!isSleep(sleeper.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
process.stdout.write(
  JSON.stringify({
    cidr: net.cidr,
    bridge: net.bridge,
    netns: [net.controller, ...net.hosts].map((n) => n.netns),
    veths: [net.controller, ...net.hosts].map((n) => n.veth),
    sleeper: sleeper.pid,
  }) + '\n',
);
setInterval(() => {}, 1 << 30);

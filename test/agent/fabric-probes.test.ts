// The agent's probe runner (FabricProbes) with real iperf3 on loopback: it measures both
// directions, runs the programs as nobody when root, skips ports something else listens on,
// ends a client that hangs at its deadline with its whole process group, ends servers at
// fabric.stop and when the link drops, names the Debian package of a missing tool, and
// refuses an address that is not an IP literal without starting anything.
import t, { type Test } from 'tap';
import { execFileSync, spawnSync } from 'node:child_process';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { readFileSync, readdirSync } from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import type { FabricMeasure, FabricServe } from '#protocol/index';
import { FabricProbes } from '#agent/fabric/fabric-probes';
import { isListening } from '#agent/fabric/listening';
import { groupMembers, processAlive } from '../helpers/cluster.js';
import { waitUntil } from '../helpers/daemons.js';

const isRoot = process.getuid?.() === 0;
const LO = '127.0.0.1';

// Every spawn of this process, seen at node:child_process itself: a refusal must start nothing.
const childProcess = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
const realSpawn = childProcess.spawn;
const spawned: string[][] = [];
childProcess.spawn = ((file: string, args: string[], options: object) => {
  spawned.push([file, ...args]);
  return realSpawn(file, args, options);
}) as typeof childProcess.spawn;
syncBuiltinESMExports();

function probesFor(t: Test): FabricProbes {
  const probes = new FabricProbes(pino({ level: 'silent' }));
  t.teardown(() => {
    probes.closeAll();
    // a probe program that escaped FabricProbes fails its test; ended here by PID, it cannot hang the run
    for (const pid of iperf3Children()) process.kill(pid, 'SIGKILL');
  });
  return probes;
}

/** Ports the kernel just handed out, so that no other test on the machine is likely to hold them. */
async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const s = net.createServer().listen(0, LO, () => resolve(s));
          s.once('error', reject);
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/** A TCP listener on loopback; `silent` accepts and never speaks (a probe server that hangs). */
async function listener(t: Test, port = 0): Promise<{ port: number; accepted: () => number }> {
  let accepted = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    accepted++;
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, LO, resolve);
  });
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return { port: (server.address() as net.AddressInfo).port, accepted: () => accepted };
}

/** This process's children running iperf3 (whose argv holds `-p PORT`, when given), by PID. */
function iperf3Children(port?: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z' || Number(fields[1]) !== process.pid) continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const p = argv.indexOf('-p');
      if (argv[0]!.endsWith('iperf3') && (port === undefined || argv[p + 1] === String(port))) out.push(Number(entry));
    } catch {
      // gone while we looked
    }
  }
  return out;
}

/** The real, effective, saved and filesystem uids (or gids) and the supplementary groups of a process. */
function credentials(pid: number): { uid: string; gid: string; groups: string } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => (status.match(new RegExp(`^${name}:[ \\t]*(.*)$`, 'm'))?.[1] ?? '').trim();
  return { uid: field('Uid'), gid: field('Gid'), groups: field('Groups') };
}

function serveMsg(id: string, ports: number[], extra: Partial<FabricServe> = {}): FabricServe {
  return { type: 'fabric.serve', id, tool: 'iperf3', durationS: 1, address: LO, ports, ttlMs: 30_000, ...extra };
}
function measureMsg(id: string, port: number, extra: Partial<FabricMeasure> = {}): FabricMeasure {
  return {
    type: 'fabric.measure',
    id,
    tool: 'iperf3',
    durationS: 1,
    address: LO,
    port,
    bind: LO,
    timeoutMs: 15_000,
    ...extra,
  };
}

t.test('serve, then measure: both directions and a latency', async (t) => {
  const probes = probesFor(t);
  const [port] = await freePorts(1);
  const serving = await probes.serve(serveMsg('s-measure', [port!]));
  t.same(serving, { type: 'fabric.serving', port }, 'the server listens on the offered port');
  const m = await probes.measure(measureMsg('m-measure', port!));
  t.equal(m.error, undefined, `no error: ${JSON.stringify(m.error)}`);
  t.equal(m.timedOut, false);
  t.ok(m.forwardBps !== null && m.forwardBps > 0, `client → server measured: ${m.forwardBps}`);
  t.ok(m.reverseBps !== null && m.reverseBps > 0, `server → client measured: ${m.reverseBps}`);
  t.ok(m.latencyUs !== null && m.latencyUs > 0, `a latency: ${m.latencyUs} µs`);
  // iperf3 -s -1 ends after its one client: nothing of the probe is left
  await waitUntil('the server to end after its client', 10_000, () => iperf3Children(port).length === 0);
  t.notOk(await isListening(port!), 'the port is free again');
});

const notRootNobody = 'not root: the probes run as whoever runs the agent, so there is no identity change to see';
t.test(
  'as root, the server and the client run as nobody with no supplementary groups',
  { skip: isRoot ? false : notRootNobody },
  async (t) => {
    const nobody = execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim();
    const nogroup = execFileSync('id', ['-g', 'nobody'], { encoding: 'utf8' }).trim();
    const probes = probesFor(t);
    const [port] = await freePorts(1);
    t.equal((await probes.serve(serveMsg('s-nobody', [port!]))).port, port);
    const [server] = iperf3Children(port);
    t.ok(server, 'the server is running');
    t.same(credentials(server!), {
      uid: [nobody, nobody, nobody, nobody].join('\t'),
      gid: [nogroup, nogroup, nogroup, nogroup].join('\t'),
      groups: '',
    });
    const measuring = probes.measure(measureMsg('m-nobody', port!, { durationS: 3 }));
    const client = await waitUntil('the client to start', 5000, () =>
      iperf3Children(port).find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('-c')),
    );
    t.same(credentials(client), {
      uid: [nobody, nobody, nobody, nobody].join('\t'),
      gid: [nogroup, nogroup, nogroup, nogroup].join('\t'),
      groups: '',
    });
    const m = await measuring;
    t.equal(m.error, undefined, 'and as nobody it measures');
  },
);

t.test('a port something already listens on is skipped; all taken is RANKD_PROBE_PORTS_IN_USE', async (t) => {
  const probes = probesFor(t);
  const [free] = await freePorts(1);
  const taken = await listener(t);
  const serving = await probes.serve(serveMsg('s-skip', [taken.port, free!]));
  t.same(serving, { type: 'fabric.serving', port: free }, 'the taken port is passed over for the next');
  t.equal(taken.accepted(), 0, 'the taken port was not probed with a connection');
  probes.stop('s-skip');

  const other = await listener(t);
  const before = spawned.length;
  const none = await probes.serve(serveMsg('s-all-taken', [taken.port, other.port]));
  t.same(none, {
    type: 'fabric.serving',
    port: null,
    error: {
      code: 'RANKD_PROBE_PORTS_IN_USE',
      message: `every offered port is in use (${taken.port}, ${other.port})`,
    },
  });
  t.equal(spawned.length, before, 'no server was started on a taken port');
});

t.test('a client whose server never speaks is ended at timeoutMs with its process group', async (t) => {
  const probes = probesFor(t);
  const silent = await listener(t);
  const timeoutMs = 2000;
  const measuring = probes.measure(measureMsg('m-hang', silent.port, { timeoutMs }));
  const client = await waitUntil('the client to start', 5000, () => iperf3Children(silent.port)[0]);
  t.equal(
    Number(readFileSync(`/proc/${client}/stat`, 'utf8').split(') ')[1]!.split(' ')[2]),
    client,
    'it leads its own process group',
  );
  const m = await measuring;
  t.ok(silent.accepted() >= 1, 'the client did connect, and then hung');
  t.equal(m.timedOut, true);
  t.equal(m.error?.code, 'RANKD_PROBE_TIMEOUT');
  t.equal(m.error?.message, `iperf3 to ${LO}:${silent.port} ran past ${timeoutMs} ms and was ended`);
  t.ok(m.durationMs >= timeoutMs, `ended at its deadline, not before (${m.durationMs} ms)`);
  t.same([m.forwardBps, m.reverseBps, m.latencyUs], [null, null, null], 'nothing measured');
  t.notOk(processAlive(client), 'the client is gone');
  t.same(groupMembers(client), [], 'and so is its process group');
});

t.test('stop(id) ends a server that waits for its client', async (t) => {
  const probes = probesFor(t);
  const [port] = await freePorts(1);
  t.equal((await probes.serve(serveMsg('s-stop', [port!]))).port, port);
  const [server] = iperf3Children(port);
  t.ok(server !== undefined && processAlive(server), 'the server waits');
  probes.stop('s-stop');
  await waitUntil('the server to be gone', 5000, () => !processAlive(server!));
  t.same(groupMembers(server!), [], 'its process group is gone');
  t.notOk(await isListening(port!), 'nothing listens on its port');
  probes.stop('s-stop'); // a second stop of the same id is harmless
});

t.test('stop(id) that arrives while the server is still starting: it is not left running', async (t) => {
  // The controller sends fabric.stop when its fabric.serve request failed or timed out, which
  // is while the agent is still starting the server: the stop must not be lost.
  const probes = probesFor(t);
  const [port] = await freePorts(1);
  const serving = probes.serve(serveMsg('s-early-stop', [port!]));
  probes.stop('s-early-stop');
  t.same(await serving, {
    type: 'fabric.serving',
    port: null,
    error: { code: 'RANKD_PROBE_FAILED', message: 'the probe was stopped before its server listened' },
  });
  t.same(iperf3Children(port), [], 'no server is left');
  t.notOk(await isListening(port!), 'nothing listens on the port');
});

t.test('closeAll() while a server is still starting: it is not left running', async (t) => {
  const probes = probesFor(t);
  const [port] = await freePorts(1);
  const serving = probes.serve(serveMsg('s-early-close', [port!]));
  probes.closeAll();
  t.equal((await serving).port, null, 'no port is handed out');
  t.same(iperf3Children(port), [], 'no server is left');
  t.notOk(await isListening(port!), 'nothing listens on the port');
});

t.test('a second serve under an id that is serving is refused, so that no server escapes closeAll', async (t) => {
  const probes = probesFor(t);
  const [first, second] = await freePorts(2);
  t.equal((await probes.serve(serveMsg('s-dup', [first!]))).port, first);
  const before = spawned.length;
  t.same(await probes.serve(serveMsg('s-dup', [second!])), {
    type: 'fabric.serving',
    port: null,
    error: { code: 'RANKD_PROBE_FAILED', message: 'a probe server with id s-dup is already running' },
  });
  t.equal(spawned.length, before, 'no second server was started');
  const [server] = iperf3Children(first);
  probes.closeAll();
  await waitUntil('the first server to be gone', 5000, () => !processAlive(server!));
  t.same(groupMembers(server!), [], 'closeAll still ends the first server');
});

t.test('a server ends by itself at its ttl', async (t) => {
  const probes = probesFor(t);
  const [port] = await freePorts(1);
  t.equal((await probes.serve(serveMsg('s-ttl', [port!], { ttlMs: 1000 }))).port, port);
  const [server] = iperf3Children(port);
  t.ok(server !== undefined, 'the server waits');
  await waitUntil('the server to end at its ttl', 10_000, () => !processAlive(server!));
  t.same(groupMembers(server!), []);
});

t.test('closeAll() ends every server and every client', async (t) => {
  const probes = probesFor(t);
  const [a, b] = await freePorts(2);
  t.equal((await probes.serve(serveMsg('s-close-a', [a!]))).port, a);
  t.equal((await probes.serve(serveMsg('s-close-b', [b!]))).port, b);
  const silent = await listener(t);
  const measuring = probes.measure(measureMsg('m-close', silent.port, { timeoutMs: 60_000 }));
  const client = await waitUntil('the client to start', 5000, () => iperf3Children(silent.port)[0]);
  const servers = [...iperf3Children(a), ...iperf3Children(b)];
  t.equal(servers.length, 2, 'two servers wait');
  probes.closeAll();
  const m = await measuring;
  t.equal(m.timedOut, false, 'the client was ended by closeAll, not by its deadline');
  t.equal(m.error?.code, 'RANKD_PROBE_FAILED');
  t.match(m.error?.message, /killed by SIGKILL/);
  for (const pid of [client, ...servers]) {
    await waitUntil(`process ${pid} to be gone`, 5000, () => !processAlive(pid));
    t.same(groupMembers(pid), [], `process group ${pid} is gone`);
  }
});

t.test('an address that is not an IP literal is refused before anything starts', async (t) => {
  const probes = probesFor(t);
  const [port] = await freePorts(1);
  const before = spawned.length;
  t.same(await probes.serve(serveMsg('s-name', [port!], { address: 'localhost' })), {
    type: 'fabric.serving',
    port: null,
    error: { code: 'RANKD_PROBE_FAILED', message: '"localhost" is not an IP address' },
  });
  const m1 = await probes.measure(measureMsg('m-name', port!, { address: '-x1.2.3' }));
  t.same(m1.error, { code: 'RANKD_PROBE_FAILED', message: '"-x1.2.3" is not an IP address' });
  const m2 = await probes.measure(measureMsg('m-bind', port!, { bind: '1.2.3.4.5' }));
  t.same(m2.error, { code: 'RANKD_PROBE_FAILED', message: '"1.2.3.4.5" is not an IP address' });
  t.equal(spawned.length, before, 'no program was started');
});

// The agent finds tools on its PATH and the standard directories, so a PATH cannot hide
// /usr/bin/iperf3. A private mount namespace can: there, /usr/bin/iperf3 is /dev/null,
// which is not an executable file, and the agent's FabricProbes runs in that view.
const notRootMount = 'not root: hiding /usr/bin/iperf3 takes a private mount namespace (unshare -m)';
t.test(
  'a missing tool is RANKD_PROBE_TOOL_MISSING naming its Debian package',
  { skip: isRoot ? false : notRootMount },
  async (t) => {
    const probesModule = fileURLToPath(new URL('../../packages/agent/dist/fabric/fabric-probes.js', import.meta.url));
    const script = `
    const { FabricProbes } = await import(${JSON.stringify(probesModule)});
    const { pino } = await import('pino');
    const p = new FabricProbes(pino({ level: 'silent' }));
    const served = await p.serve({ type: 'fabric.serve', id: 's', tool: 'iperf3', durationS: 1,
      address: '127.0.0.1', ports: [29999], ttlMs: 5000 });
    const measured = await p.measure({ type: 'fabric.measure', id: 'm', tool: 'iperf3', durationS: 1,
      address: '127.0.0.1', port: 29999, timeoutMs: 5000 });
    process.stdout.write(JSON.stringify({ served, measured }));`;
    const r = spawnSync(
      'unshare',
      [
        '--mount',
        '--propagation',
        'private',
        '--',
        'sh',
        '-c',
        'mount --bind /dev/null "$(readlink -f /usr/bin/iperf3)" && exec "$0" --input-type=module -e "$1"',
        process.execPath,
        script,
      ],
      { cwd: fileURLToPath(new URL('../..', import.meta.url)), encoding: 'utf8', timeout: 30_000 },
    );
    t.equal(r.status, 0, `the script ran: ${r.stderr}`);
    const { served, measured } = JSON.parse(r.stdout) as {
      served: { port: number | null; error?: { code: string; message: string } };
      measured: { error?: { code: string; message: string }; timedOut: boolean };
    };
    const expected = { code: 'RANKD_PROBE_TOOL_MISSING', message: 'iperf3 is not installed (apt install iperf3)' };
    t.same(served, { type: 'fabric.serving', port: null, error: expected });
    t.same(measured.error, expected);
    t.equal(measured.timedOut, false);
    t.ok(spawnSync('iperf3', ['--version']).status === 0, 'outside the namespace iperf3 is still there');
  },
);

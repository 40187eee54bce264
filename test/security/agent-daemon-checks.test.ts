// An agent checks every ompi.daemon.run against its own record of the job, even when it
// comes from its controller (docs/security.md, "Agent messages"). A real agent, enrolled with
// a real controller, is pointed at a stand-in controller that serves the real controller's
// own certificate (so the agent's pinned CA accepts it) and sends what no honest controller
// would: a daemon for a job the node does not hold, a shell command as the daemon's
// arguments, arguments the job's settings do not make, an extra parameter, a second daemon.
// Each is reported as a failed daemon with its code; the one well-formed launch runs the
// node's own orted; the marker file a shell would have made never appears.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { WebSocketServer, type WebSocket } from 'ws';
import { RANKD_VERSION, ortedArgs, type OrtedLaunch } from '@rankd/protocol';
import { agentStateDir, spawnDaemon, startAgent, startController, waitForNode, waitUntil } from '../helpers/daemons.js';
import { openMpiUnsupported } from '../mpi/helpers.js';

type Frame = { type: string; jobId?: string; daemon?: number; state?: string; message?: string } & Record<
  string,
  unknown
>;

const skip = openMpiUnsupported();

/**
 * A real agent, enrolled with a real controller, then linked to a stand-in controller that
 * serves the real one's certificate. `allowRoot`: whether the agent gets --allow-root.
 */
async function agentOnStandIn(t: Test, allowRoot: boolean) {
  // a real enrollment: the agent's state dir then holds its certificate and the pinned CA
  const controller = await startController();
  t.teardown(() => controller.stop());
  const enrolled = startAgent(controller, { name: 'victim' });
  await waitForNode(controller, 'victim', 'ready');
  await enrolled.stop();

  // the stand-in controller, on the real one's certificate
  const frames: Frame[] = [];
  let agent: WebSocket | null = null;
  const server: Server = createServer({
    key: readFileSync(join(controller.dataDir, 'server.key')),
    cert: readFileSync(join(controller.dataDir, 'server.crt')),
    requestCert: true,
    rejectUnauthorized: false,
  });
  const wss = new WebSocketServer({ server, path: '/v1/agent', handleProtocols: () => 'rankd.v1' });
  wss.on('connection', (ws) => {
    agent = ws;
    ws.on('message', (d: Buffer) => {
      const frame = JSON.parse(d.toString()) as Frame;
      frames.push(frame);
      if (frame.type === 'hello')
        ws.send(
          JSON.stringify({ type: 'welcome', controllerVersion: RANKD_VERSION, heartbeatMs: 1000, ttlMs: 10_000 }),
        );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const c of wss.clients) c.terminate();
    wss.close();
    server.close();
  });
  const port = (server.address() as { port: number }).port;
  const spool = mkdtempSync(join(tmpdir(), 'rankd-spool-checks-'));
  const args = [
    'agent',
    '--controller',
    `https://127.0.0.1:${port}`,
    '--ca-hash',
    controller.caHash,
    '--state-dir',
    agentStateDir(controller, 'victim'),
    '--name',
    'victim',
    '--config',
    '/dev/null',
    '--spool-dir',
    spool,
  ];
  const victim = spawnDaemon(allowRoot ? [...args, '--allow-root'] : args, { RANKD_RECONNECT_MAX_MS: '500' });
  t.teardown(async () => {
    await victim.stop();
    rmSync(spool, { recursive: true, force: true });
  });
  await waitUntil('the agent says hello to the stand-in', 20_000, () => frames.some((f) => f.type === 'hello'));
  const send = (frame: Record<string, unknown>) => agent!.send(JSON.stringify(frame));
  const stateOf = async (daemon: number, jobId = 'j1'): Promise<Frame> =>
    waitUntil(`ompi.daemon.state of ${jobId} daemon ${daemon}`, 20_000, () =>
      frames.find((f) => f.type === 'ompi.daemon.state' && f.jobId === jobId && f.daemon === daemon),
    );
  const daemonDirs = () => {
    const dir = join(spool, '.openmpi', 'j1');
    return existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith('daemon-')) : [];
  };
  /** One Open MPI job, j1, of one rank on this node, with one setting of the job's own. */
  const startJob = (env: Record<string, string>) => {
    send({
      type: 'ompi.start',
      jobId: 'j1',
      leaseMs: 60_000,
      ranks: [{ rank: 0, argv: ['/bin/sleep', '30'], env, cpus: [0], memNodes: [0] }],
    });
    t.teardown(() => send({ type: 'ompi.abort', jobId: 'j1', graceMs: 500, reason: 'test over' }));
  };
  return { frames, send, stateOf, daemonDirs, startJob };
}

// nothing listens on port 9 here: an orted started with this launch fails to reach its HNP and ends
const launch: OrtedLaunch = {
  jobFamily: '4242',
  vpid: 1,
  numProcs: 2,
  nodeRegex: 'launcher,victim@0(2)',
  hnpUri: '4242.0;tcp://127.0.0.1:9',
};

t.test(
  'an agent runs only the Open MPI daemon its own record of the job expects, whoever asks',
  { skip: skip ?? false },
  async (t) => {
    const { send, stateOf, daemonDirs, startJob } = await agentOnStandIn(t, true);
    const env = { OMPI_MCA_btl: 'self' };
    startJob(env);
    const marker = join(tmpdir(), `rankd-marker-${process.pid}-${Date.now()}`);
    const good = ortedArgs(launch, env);

    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['a job this node does not hold', { jobId: 'j2', daemon: 0, args: good }, 'RANKD_FOREIGN_JOB'],
      [
        'a shell command as arguments',
        { jobId: 'j1', daemon: 1, args: ['/bin/sh', '-c', `touch ${marker}`] },
        'RANKD_ORTED_LAUNCH_INVALID',
      ],
      [
        "arguments without the job's own setting",
        { jobId: 'j1', daemon: 2, args: ortedArgs(launch, {}) },
        'RANKD_ORTED_LAUNCH_INVALID',
      ],
      [
        'an extra parameter',
        { jobId: 'j1', daemon: 3, args: [...good, '-mca', 'plm_rsh_agent', `/bin/sh -c "touch ${marker}"`] },
        'RANKD_ORTED_LAUNCH_INVALID',
      ],
      [
        'a launch value that breaks the grammar',
        { jobId: 'j1', daemon: 4, args: good.map((a) => (a === launch.nodeRegex ? `x;touch ${marker}` : a)) },
        'RANKD_ORTED_LAUNCH_INVALID',
      ],
    ];
    for (const [what, fields, code] of cases) {
      send({ type: 'ompi.daemon.run', ...fields });
      const state = await stateOf(fields['daemon'] as number, fields['jobId'] as string);
      t.equal(state.state, 'failed', `${what}: the daemon fails`);
      t.match(state.message, new RegExp(`^${code}: `), `${what}: ${state.message}`);
    }
    t.same(daemonDirs(), [], 'no daemon was started');

    // the launch its record of the job makes runs its own orted; a second daemon of the job does not
    send({ type: 'ompi.daemon.run', jobId: 'j1', daemon: 5, args: good });
    const started = await stateOf(5);
    t.equal(started.state, 'started', `the expected daemon starts (${started.message ?? ''})`);
    send({ type: 'ompi.daemon.run', jobId: 'j1', daemon: 6, args: good });
    const second = await stateOf(6);
    t.match(
      second,
      { state: 'failed', message: /^RANKD_OMPI_DAEMON_REFUSED: / },
      `a second daemon is refused (${second.message})`,
    );
    t.same(daemonDirs(), ['daemon-5'], 'one daemon directory, the expected one');
    t.notOk(existsSync(marker), 'the marker file never appears');
  },
);

const notRoot =
  process.getuid?.() === 0 ? null : 'the agent refuses root jobs only when it runs as root (CI runs as root)';

t.test(
  'an agent without --allow-root runs no Open MPI daemon as root',
  { skip: notRoot ?? skip ?? false },
  async (t) => {
    const { send, stateOf, daemonDirs, startJob } = await agentOnStandIn(t, false);
    const env = { OMPI_MCA_btl: 'self' };
    startJob(env);
    // the job names no user: its user is the agent's own, root
    send({ type: 'ompi.daemon.run', jobId: 'j1', daemon: 0, args: ortedArgs(launch, env) });
    const state = await stateOf(0);
    t.match(state, { state: 'failed', message: /^RANKD_RANK_ROOT_NOT_ALLOWED: / }, `refused: ${state.message}`);
    t.same(daemonDirs(), [], 'no daemon was started');
  },
);

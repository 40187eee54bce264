// Nodes never command each other (docs/security.md, "Agent messages"). A tampered agent
// (a real WebSocket client with a real node certificate, speaking the gateway protocol by
// hand) takes part in a real Open MPI job whose launcher is another node, and asks, for that
// job and for a job it has no part in, for daemons and states that are not its own, one of
// them with a command that would create a marker file as root. Each is refused with a
// stable code and audited under its name; the marker never appears, no daemon is asked of
// the other agents, and both jobs run on untouched. The daemon that the real launcher asks
// of the tampered node arrives as arguments the controller built, never as a command.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { checkOrtedArgs, type OrtedLaunch } from '@rankd/protocol';
import { readHistory } from '../cluster/harness/history.js';
import { startAgent, startController, waitForNode, waitUntil, type ControllerHandle } from '../helpers/daemons.js';
import { enrollIdentity, gatewayUrl } from '../helpers/tls.js';
import { openMpiUnsupported } from '../mpi/helpers.js';

type Frame = {
  type: string;
  code?: string;
  message?: string;
  inReplyTo?: string;
  jobId?: string;
  args?: string[];
} & Record<string, unknown>;
interface JobView {
  state: string;
  ranks: Array<{ rank: number; node: string; state: string }>;
}

const skip = openMpiUnsupported();

/** A node that speaks the gateway protocol by hand: a tampered agent. */
async function tamperedAgent(t: Test, controller: ControllerHandle, name: string, facts: unknown) {
  const id = await enrollIdentity(controller, name);
  const ws = new WebSocket(gatewayUrl(controller.url), ['rankd.v1'], { ca: id.ca, cert: id.cert, key: id.key });
  const frames: Frame[] = [];
  ws.on('message', (d: Buffer) => frames.push(JSON.parse(d.toString()) as Frame));
  ws.on('error', () => undefined);
  await new Promise<void>((r) => ws.on('open', () => r()));
  ws.send(JSON.stringify({ type: 'hello', name, version: 'test', capabilities: [], labels: {}, facts }));
  let seq = 0;
  const beat = setInterval(() => ws.send(JSON.stringify({ type: 'heartbeat', seq: seq++ })), 500);
  t.teardown(() => {
    clearInterval(beat);
    ws.terminate();
  });
  await waitUntil('welcome', 5000, () => frames.some((f) => f.type === 'welcome'));
  /** Sends one frame and returns the error frame it earns. */
  const refused = async (frame: Record<string, unknown>): Promise<Frame> => {
    const before = frames.filter((f) => f.type === 'error').length;
    ws.send(JSON.stringify(frame));
    return waitUntil(
      `refusal of ${String(frame['type'])}`,
      5000,
      () => frames.filter((f) => f.type === 'error')[before],
    );
  };
  const send = (frame: Record<string, unknown>): void => ws.send(JSON.stringify(frame));
  return { frames, refused, send };
}

async function submit(controller: ControllerHandle, nodelist: string[]): Promise<string> {
  const r = await controller.api<{ id: string }>('/v1/jobs', {
    method: 'POST',
    body: {
      command: ['sleep', '120'],
      mpi: 'openmpi',
      placement: { ntasks: nodelist.length, nodes: nodelist.length, nodelist, cpusPerRank: 1 },
    },
  });
  if (r.status >= 300) throw new Error(`submit: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.id;
}

const job = async (controller: ControllerHandle, id: string) => (await controller.api<JobView>(`/v1/jobs/${id}`)).body;

t.test(
  'a tampered node is refused every Open MPI message not its own, audited, and nothing runs',
  { skip: skip ?? false },
  async (t) => {
    const controller = await startController();
    t.teardown(() => controller.stop());
    const spools: Record<string, string> = {};
    for (const name of ['alpha', 'victim']) {
      spools[name] = mkdtempSync(join(tmpdir(), `rankd-spool-${name}-`));
      const agent = startAgent(controller, { name, spoolDir: spools[name] });
      t.teardown(async () => {
        await agent.stop();
        rmSync(spools[name]!, { recursive: true, force: true });
      });
    }
    for (const name of ['alpha', 'victim']) await waitForNode(controller, name, 'ready');
    const facts = (await controller.api('/v1/nodes/victim/facts')).body;
    const mallory = await tamperedAgent(t, controller, 'mallory', facts);
    await waitForNode(controller, 'mallory', 'ready');
    const marker = join(tmpdir(), `rankd-marker-${process.pid}-${Date.now()}`);

    // a real Open MPI job of alpha (rank 0: mpirun), mallory and victim; and one of alpha and victim only
    const shared = await submit(controller, ['alpha', 'mallory', 'victim']);
    const other = await submit(controller, ['alpha', 'victim']);
    t.teardown(async () => {
      for (const id of [shared, other]) await controller.api(`/v1/jobs/${id}/cancel`, { method: 'POST', body: {} });
    });
    t.equal((await job(controller, shared)).ranks[0]?.node, 'alpha', "alpha runs the shared job's mpirun");

    // the daemon mpirun asks of mallory arrives as arguments the controller built from checked values
    const run = await waitUntil('ompi.daemon.run for mallory', 30_000, () =>
      mallory.frames.find((f) => f.type === 'ompi.daemon.run' && f.jobId === shared),
    );
    t.notOk('command' in run, 'no command string');
    const launch: OrtedLaunch = checkOrtedArgs(run.args!, {});
    t.equal(run.args![0], '-mca', "arguments only: the program is the node's own orted");
    await waitUntil('the other job running', 30_000, async () => {
      const view = await job(controller, other);
      return view.ranks.length === 2 && view.ranks.every((r) => r.state === 'running');
    });
    const requestedBefore = readHistory(controller.dataDir).events.filter(
      (e) => e.kind === 'ompi.daemon' && e.data['state'] === 'requested',
    ).length;

    const orted = { ...launch, vpid: 2 };
    const hostile = `touch ${marker}`;
    const cases: Array<[string, Record<string, unknown>, string]> = [
      [
        'a daemon for a job it has no part in',
        { type: 'ompi.daemon.request', jobId: other, daemon: 1, host: 'victim', orted },
        'RANKD_FOREIGN_JOB',
      ],
      [
        'a daemon on victim for the job it shares, whose launcher it is not',
        { type: 'ompi.daemon.request', jobId: shared, daemon: 1, host: 'victim', orted },
        'RANKD_NOT_JOB_LAUNCHER',
      ],
      [
        'a daemon on itself, likewise',
        { type: 'ompi.daemon.request', jobId: shared, daemon: 2, host: 'mallory', orted },
        'RANKD_NOT_JOB_LAUNCHER',
      ],
      [
        'a command string as root',
        { type: 'ompi.daemon.request', jobId: shared, daemon: 1, host: 'victim', command: hostile },
        'RANKD_INVALID_MESSAGE',
      ],
      [
        'shell text in a launch value',
        {
          type: 'ompi.daemon.request',
          jobId: shared,
          daemon: 1,
          host: 'victim',
          orted: { ...orted, nodeRegex: `x;${hostile}` },
        },
        'RANKD_INVALID_MESSAGE',
      ],
      [
        "mpirun's end, for the shared job",
        { type: 'ompi.launcher.state', jobId: shared, state: 'exited', pid: 1, code: 0, signal: null },
        'RANKD_NOT_JOB_LAUNCHER',
      ],
      [
        "victim's daemon's end",
        { type: 'ompi.daemon.state', jobId: shared, daemon: 0, host: 'victim', state: 'exited', code: 0, signal: null },
        'RANKD_OMPI_DAEMON_REFUSED',
      ],
      [
        'a daemon state for a job it has no part in',
        { type: 'ompi.daemon.state', jobId: other, daemon: 0, host: 'mallory', state: 'failed', message: 'x' },
        'RANKD_FOREIGN_JOB',
      ],
      [
        "mpirun's end, for a job it has no part in",
        { type: 'ompi.launcher.state', jobId: other, state: 'failed', message: 'x' },
        'RANKD_FOREIGN_JOB',
      ],
      [
        "a rank's exit, for a job it has no part in",
        {
          type: 'rank.exit',
          jobId: other,
          rank: 0,
          code: 0,
          signal: null,
          endedAt: new Date().toISOString(),
          outputBytes: { stdout: 0, stderr: 0 },
        },
        'RANKD_FOREIGN_RANK',
      ],
    ];
    for (const [what, frame, code] of cases) {
      const refusal = await mallory.refused(frame);
      t.equal(refusal.code, code, `${what}: refused with ${code} (${refusal.message})`);
      t.equal(refusal.inReplyTo, frame['type']);
    }

    // audited under mallory's name, with the code: refusals are counted, one entry per code and
    // minute (two when the test crosses a minute), whose routes are the message types refused
    const auditedCodes = [
      'RANKD_FOREIGN_JOB',
      'RANKD_NOT_JOB_LAUNCHER',
      'RANKD_OMPI_DAEMON_REFUSED',
      'RANKD_FOREIGN_RANK',
    ];
    type Entry = {
      user: string | null;
      route: string;
      role: string;
      resource: Record<string, string>;
      decision: string;
      reason: string;
      status: number;
      count: number;
    };
    const audited = async (code: string) =>
      (await controller.api<{ entries: Entry[] }>('/v1/audit')).body.entries.filter(
        (e) => e.resource['node'] === 'mallory' && e.decision === 'deny' && e.reason.startsWith(`${code}: `),
      );
    const counted = (entries: Entry[]) => entries.reduce((n, e) => n + e.count, 0);
    const typesOf = (entries: Entry[]) =>
      new Set(entries.flatMap((e) => (e.resource['routes'] ? e.resource['routes'].split(' ') : [e.route])));
    const entriesBefore: Record<string, number> = {};
    for (const code of auditedCodes) {
      const mine = cases.filter(([, , c]) => c === code);
      const entries = await audited(code);
      entriesBefore[code] = entries.length;
      t.ok(entries.length >= 1 && entries.length <= 2, `${code}: one entry a minute (${entries.length})`);
      t.equal(counted(entries), mine.length, `${code}: counts every refusal (${mine.length})`);
      t.same(
        [...typesOf(entries)].sort(),
        [...new Set(mine.map(([, frame]) => String(frame['type'])))].sort(),
        `${code}: names every message type refused`,
      );
      t.match(
        entries[0],
        { user: 'mallory', role: 'node', status: 403, resource: { node: 'mallory', job: mine[0]![1]['jobId'] } },
        `${code}: under mallory's name, about the first refusal's job`,
      );
    }
    // a node repeating itself is refused every time, and does not flood the audit log
    const flood = 200;
    const errorsBefore = mallory.frames.filter((f) => f.type === 'error').length;
    for (let i = 0; i < flood; i++)
      mallory.send({ type: 'ompi.daemon.request', jobId: shared, daemon: 1, host: 'victim', orted });
    await waitUntil(
      `${flood} refusals`,
      10_000,
      () => mallory.frames.filter((f) => f.type === 'error').length >= errorsBefore + flood,
    );
    t.ok(
      mallory.frames.slice(-flood).every((f) => f.type === 'error' && f.code === 'RANKD_NOT_JOB_LAUNCHER'),
      `each of ${flood} repeats is refused`,
    );
    const repeated = await audited('RANKD_NOT_JOB_LAUNCHER');
    t.ok(
      repeated.length <= entriesBefore['RANKD_NOT_JOB_LAUNCHER']! + 1,
      `and the audit log holds at most one more entry, for a new minute (${repeated.length} now)`,
    );
    t.equal(
      counted(repeated),
      cases.filter(([, , c]) => c === 'RANKD_NOT_JOB_LAUNCHER').length + flood,
      'whose counts add up to every refusal',
    );

    // nothing ran: no daemon asked of anyone, no daemon directory beyond the launcher's own on any agent, both jobs untouched
    const history = readHistory(controller.dataDir).events;
    t.equal(
      history.filter((e) => e.kind === 'ompi.daemon' && e.data['state'] === 'requested').length,
      requestedBefore,
      'no daemon was asked of any node',
    );
    t.notOk(
      history.some((e) => e.kind === 'ompi.launcher' && e.subject === shared && e.data['state'] === 'exited'),
      "mallory's word did not end mpirun's record",
    );
    for (const [name, spool] of Object.entries(spools)) {
      for (const id of [shared, other]) {
        const dir = join(spool, '.openmpi', id);
        const daemons = existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith('daemon-')) : [];
        t.ok(daemons.length <= 1, `${name}: at most its one daemon of job ${id} (${daemons.join(',')})`);
      }
    }
    for (const id of [shared, other])
      t.notMatch((await job(controller, id)).state, /failed|succeeded|cancelled/, `job ${id} runs on`);
    t.equal((await job(controller, other)).ranks[0]?.state, 'running', "the other job's rank 0 is untouched");
    t.notOk(existsSync(marker), 'no marker file');
  },
);

t.test(
  'a tampered launcher node gets only a checked orted started on another node, never its own command',
  { skip: skip ?? false },
  async (t) => {
    const controller = await startController();
    t.teardown(() => controller.stop());
    const spool = mkdtempSync(join(tmpdir(), 'rankd-spool-victim-'));
    const victim = startAgent(controller, { name: 'victim', spoolDir: spool });
    t.teardown(async () => {
      await victim.stop();
      rmSync(spool, { recursive: true, force: true });
    });
    await waitForNode(controller, 'victim', 'ready');
    // mallory reports the victim's facts: the same machine, so the same addresses
    const facts = (
      await controller.api<{ nics: Array<{ addresses: Array<{ family: string; address: string }> }> }>(
        '/v1/nodes/victim/facts',
      )
    ).body;
    const own =
      facts.nics.flatMap((n) => n.addresses).find((a) => a.family === 'inet' && !a.address.startsWith('127.'))
        ?.address ?? '127.0.0.1';
    const mallory = await tamperedAgent(t, controller, 'mallory', facts);
    await waitForNode(controller, 'mallory', 'ready');
    const marker = join(tmpdir(), `rankd-marker-${process.pid}-${Date.now()}`);

    const id = await submit(controller, ['mallory', 'victim']);
    t.teardown(async () => {
      await controller.api(`/v1/jobs/${id}/cancel`, { method: 'POST', body: {} });
    });
    t.equal((await job(controller, id)).ranks[0]?.node, 'mallory', 'mallory runs the launcher');
    // and a PMI job of victim's alone
    const pmiJob = await controller.api<{ id: string }>('/v1/jobs', {
      method: 'POST',
      body: { command: ['sleep', '120'], placement: { ntasks: 1, nodelist: ['victim'], cpusPerRank: 1 } },
    });
    t.ok(pmiJob.status < 300, JSON.stringify(pmiJob.body));
    t.teardown(async () => {
      await controller.api(`/v1/jobs/${pmiJob.body.id}/cancel`, { method: 'POST', body: {} });
    });
    await waitUntil(
      'the PMI job running',
      20_000,
      async () => (await job(controller, pmiJob.body.id)).ranks[0]?.state === 'running',
    );
    const start = await waitUntil('ompi.start with the launcher', 20_000, () =>
      mallory.frames.find((f) => f.type === 'ompi.start' && f.jobId === id),
    );
    t.ok(start['launcher'], 'mallory was sent the launcher spec');

    // a real port on mallory's address that nothing serves: the orted, if started, fails to reach it and ends
    const orted: OrtedLaunch = {
      jobFamily: '1234567',
      vpid: 1,
      numProcs: 2,
      nodeRegex: 'mallory,victim@0(2)',
      hnpUri: `1234567.0;tcp://${own}:9`,
    };
    const request = (fields: Record<string, unknown>) => ({
      type: 'ompi.daemon.request',
      jobId: id,
      daemon: 0,
      host: 'victim',
      orted,
      ...fields,
    });
    const hostile = `touch ${marker}`;
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['a command string', request({ orted: undefined, command: hostile }), 'RANKD_INVALID_MESSAGE'],
      ['a command beside the launch', request({ command: hostile }), 'RANKD_INVALID_MESSAGE'],
      [
        'shell text in the HNP URI',
        request({ orted: { ...orted, hnpUri: `1234567.0;tcp://$(${hostile}):9` } }),
        'RANKD_INVALID_MESSAGE',
      ],
      ['an unknown launch field', request({ orted: { ...orted, prefix: '/tmp' } }), 'RANKD_INVALID_MESSAGE'],
      [
        'an HNP that is not the launcher node',
        request({ orted: { ...orted, hnpUri: '1234567.0;tcp://192.0.2.77:9' } }),
        'RANKD_ORTED_LAUNCH_INVALID',
      ],
      [
        'an HNP of another job family',
        request({ orted: { ...orted, hnpUri: `7654321.0;tcp://${own}:9` } }),
        'RANKD_ORTED_LAUNCH_INVALID',
      ],
      [
        'more daemons than the job has nodes',
        request({ orted: { ...orted, numProcs: 9, vpid: 8 } }),
        'RANKD_ORTED_LAUNCH_INVALID',
      ],
      ['a daemon index out of range', request({ daemon: 2 }), 'RANKD_OMPI_DAEMON_REFUSED'],
      ['a host that is not a node of the job', request({ host: 'alpha' }), 'RANKD_OMPI_DAEMON_REFUSED'],
      ['a daemon for a job that is not Open MPI', request({ jobId: pmiJob.body.id }), 'RANKD_FOREIGN_JOB'],
      [
        "a fence of victim's PMI job",
        { type: 'pmi.fence', jobId: pmiJob.body.id, epoch: 0, part: 0, pairs: [['k', 'v']] },
        'RANKD_FOREIGN_JOB',
      ],
      [
        "a fetch of victim's PMI job's fence",
        { type: 'pmi.fetch', id: 'f1', jobId: pmiJob.body.id, epoch: 0, chunk: 0 },
        'RANKD_FOREIGN_JOB',
      ],
      [
        "a PMI failure of victim's rank",
        { type: 'pmi.failed', jobId: pmiJob.body.id, rank: 0, exitCode: 1, reason: 'x' },
        'RANKD_FOREIGN_RANK',
      ],
    ];
    for (const [what, frame, code] of cases) {
      const refusal = await mallory.refused(frame);
      t.equal(refusal.code, code, `${what}: refused with ${code} (${refusal.message})`);
    }
    const history = () =>
      readHistory(controller.dataDir).events.filter((e) => e.subject === id && e.kind === 'ompi.daemon');
    t.same(history(), [], 'no daemon was asked of victim');
    t.notOk(existsSync(join(spool, '.openmpi', id, 'daemon-0')), 'victim started nothing');

    // a launch that passes: victim runs its own orted with the arguments the controller built
    mallory.frames.length = 0;
    mallory.send(request({}));
    const started = await waitUntil('the daemon reported to mallory', 20_000, () =>
      mallory.frames.find((f) => f.type === 'ompi.daemon.state' && f.jobId === id),
    );
    t.same(
      mallory.frames.filter((f) => f.type === 'error'),
      [],
      'a checked launch is not refused',
    );
    const asked = history().find((e) => e.data['state'] === 'requested');
    t.ok(asked, 'the daemon was asked of victim');
    t.match(
      started['state'],
      /^(started|exited|failed)$/,
      `victim reports its daemon (${String(started['message'] ?? started['state'])})`,
    );
    // and only once per host
    const again = await mallory.refused(request({ daemon: 1, orted: { ...orted } }));
    t.equal(again.code, 'RANKD_OMPI_DAEMON_REFUSED', `a second daemon on victim is refused (${again.message})`);
    t.equal(history().filter((e) => e.data['state'] === 'requested').length, 1, 'one daemon asked of victim, no more');
    t.equal((await job(controller, pmiJob.body.id)).state, 'running', "victim's PMI job runs on");
    t.notOk(existsSync(marker), 'no marker file');
  },
);

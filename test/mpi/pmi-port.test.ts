// A `--pty` job's PMI_PORT against a hostile neighbour: another Unix user on the node who
// guesses PMI_IDs is cut off after MAX_BAD_IDS (3) tries and its later connections are
// closed unread, while the job's own ranks still connect and the job succeeds; and once
// every rank of the node has connected, or has exited, the port is gone (ECONNREFUSED).
import { spawn } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import t from 'tap';
import { localCluster } from '../helpers/cluster.js';
import { waitUntil, type ControllerHandle } from '../helpers/daemons.js';
import { PMI_CLIENT, PYTHON, type MpiJobView } from './helpers.js';

const isRoot = process.getuid?.() === 0;
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'timed-out', 'lost']);
const skip = !existsSync(PYTHON) ? `${PYTHON} is missing` : false;
/** The guesser runs as `nobody`: only root can start a process as another user. */
const skipGuesser =
  skip || (isRoot ? false : 'needs root to run the guessing client as another Unix user (nobody); CI runs as root');

/** What connecting to a port does: refused by the kernel, or answered. */
function dial(port: number): Promise<'refused' | 'connected'> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve('connected');
    });
    s.once('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNREFUSED' ? resolve('refused') : reject(err)));
  });
}

/** Submits a job over the API (it runs on while the test looks at its port) and reads its PMI_PORT from its output. */
async function ptyJob(c: ControllerHandle, ntasks: number, script: string): Promise<{ id: string; port: number }> {
  const job = await c.api<{ id: string }>('/v1/jobs', {
    method: 'POST',
    body: { command: ['sh', '-c', script], placement: { ntasks }, pty: true, cwd: '/tmp' },
  });
  if (job.status !== 201) throw new Error(`submit: ${job.status} ${JSON.stringify(job.body)}`);
  const port = await waitUntil('the ranks print their PMI_PORT', 30_000, async () => {
    const m = /port=127\.0\.0\.1:(\d+)/.exec((await c.api<string>(`/v1/jobs/${job.body.id}/logs`)).body);
    return m ? Number(m[1]) : undefined;
  });
  return { id: job.body.id, port };
}

// Twelve guesses from twelve connections, one after the other, as `nobody`: for each, the
// first answer line (or "" when none came) and whether the agent closed the connection.
const GUESSER = `
import json, random, socket, sys
port = int(sys.argv[1])
out = []
for i in range(12):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    answer = b""
    try:
        s.sendall(b"cmd=initack pmiid=%d\\n" % random.randint(1, 2**31 - 2))
        while b"\\n" not in answer:
            data = s.recv(4096)
            if not data:
                break
            answer += data
        closed = s.recv(4096) == b"" if b"\\n" in answer else True
    except (ConnectionResetError, BrokenPipeError):
        closed = True
    out.append({"answer": answer.decode("latin1").strip(), "closed": closed})
    s.close()
print(json.dumps(out))
`;

function guessAsNobody(port: number): Promise<Array<{ answer: string; closed: boolean }>> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, ['-c', GUESSER, String(port)], {
      uid: 65534,
      gid: 65534,
      cwd: '/',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const bound = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('close', (code) => {
      clearTimeout(bound);
      if (code !== 0) return reject(new Error(`guesser exited ${code}: ${err}`));
      resolve(JSON.parse(out) as Array<{ answer: string; closed: boolean }>);
    });
  });
}

t.test(
  'another user guessing PMI_IDs is cut off after 3 tries; the job still runs and its port closes once its ranks connected',
  { skip: skipGuesser },
  async (t) => {
    const { controller: c } = await localCluster(t, ['pmiport']);
    // the ranks wait until the guesser is done, speak PMI, then stay a while: the port must close before the job ends
    const { id, port } = await ptyJob(
      c,
      2,
      `echo port=$PMI_PORT; while [ ! -e /tmp/rankd-pmi-go-$RANKD_JOB_ID ]; do sleep 0.1; done; ${PYTHON} ${PMI_CLIENT} 'cmd=init pmi_version=1 pmi_subversion=1' cmd=barrier_in cmd=finalize; sleep 5`,
    );
    t.equal(await dial(port), 'connected', 'the port is open while ranks may still come');

    const guesses = await guessAsNobody(port);
    t.equal(guesses.length, 12);
    for (const [i, g] of guesses.slice(0, 3).entries()) {
      t.match(
        g.answer,
        /^cmd=error rc=-1 msg=a_PMI_ID_this_agent_did_not_give_out/,
        `guess ${i + 1} is refused with a reason`,
      );
      t.ok(g.closed, `guess ${i + 1}: the connection is closed`);
    }
    for (const [i, g] of guesses.slice(3).entries()) {
      t.same(g, { answer: '', closed: true }, `guess ${i + 4}: closed unread, no answer (its user is over the limit)`);
    }

    // the job's own ranks (root here, not nobody) are not affected
    writeFileSync(`/tmp/rankd-pmi-go-${id}`, '');
    t.teardown(() => rmSync(`/tmp/rankd-pmi-go-${id}`, { force: true }));
    const logs = () => c.api<string>(`/v1/jobs/${id}/logs`).then((r) => r.body);
    await waitUntil(
      'both ranks finalized',
      30_000,
      async () => ((await logs()).match(/finalize_ack rc=0/g) ?? []).length === 2,
    );
    const view = await c.api<MpiJobView>(`/v1/jobs/${id}`);
    t.equal(view.body.state, 'running', 'the ranks still run (they sleep after finalize)');
    t.equal(
      await dial(port),
      'refused',
      'every rank of the node connected: the port refuses new connections (ECONNREFUSED)',
    );
    t.match(await logs(), /answer: cmd=set size=2/, 'each rank got its size and rank through initack');

    const done = await waitUntil('the job ends', 30_000, async () => {
      const v = await c.api<MpiJobView>(`/v1/jobs/${id}`);
      return TERMINAL.has(v.body.state) ? v.body : undefined;
    });
    t.equal(done.state, 'succeeded', `the guessing did not harm the job (${done.reason})`);
  },
);

t.test("a --pty rank that exits without connecting takes the job's PMI port with it", { skip }, async (t) => {
  const { controller: c } = await localCluster(t, ['pmiport2']);
  const { id, port } = await ptyJob(c, 1, 'echo port=$PMI_PORT; sleep 2');
  t.equal(await dial(port), 'connected', 'open while the rank may still connect');
  await waitUntil(
    'the job ends',
    30_000,
    async () => TERMINAL.has((await c.api<MpiJobView>(`/v1/jobs/${id}`)).body.state) || undefined,
  );
  await waitUntil('the port is closed', 5000, async () => (await dial(port)) === 'refused');
  t.pass('no rank can come any more: ECONNREFUSED');
});

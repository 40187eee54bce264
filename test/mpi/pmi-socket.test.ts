// The agent's PMI-1 server as a rank meets it: scripted conversations over the real
// inherited socket (PMI_FD) and over PMI_PORT, good ones and hostile ones. Whatever one
// rank sends ends at most its own job; the agent and the other jobs go on.
import { existsSync } from 'node:fs';
import net from 'node:net';
import t from 'tap';
import { localCluster, type LocalCluster } from '../helpers/cluster.js';
import { runCli, waitForNode, waitUntil } from '../helpers/daemons.js';
import { PMI_CLIENT, PYTHON, type MpiJobView } from './helpers.js';

const skip = existsSync(PYTHON) ? false : `${PYTHON} is missing`;

/** Runs the PMI client as a one-rank job; returns its answers and the job. */
async function converse(cluster: LocalCluster, lines: string[], flags: string[] = []) {
  const r = await runCli(['run', '--no-label', '-n', '1', ...flags, '--', PYTHON, PMI_CLIENT, ...lines], cluster.env);
  const id = /^rankd: job (\S+)$/m.exec(r.stderr)?.[1];
  const job = await cluster.controller.api<MpiJobView>(`/v1/jobs/${id}`);
  const answers = r.stdout
    // a terminal ends lines with \r\n
    .split(/\r?\n/)
    .filter((l) => l.startsWith('answer: ') || l === 'closed')
    .map((l) => l.replace(/^answer: /, ''));
  return { code: r.code, stderr: r.stderr, answers, job: job.body };
}

t.test('a whole PMI-1 conversation on PMI_FD, as MPICH holds it', { skip }, async (t) => {
  const cluster = await localCluster(t, ['solo']);
  const { code, answers, job, stderr } = await converse(cluster, [
    'cmd=init pmi_version=1 pmi_subversion=1',
    'cmd=get_maxes',
    'cmd=get_appnum',
    'cmd=get_my_kvsname',
    'cmd=get_universe_size',
    'cmd=put kvsname=%KVS% key=card-0 value=addr#10.0.0.1$port#4711=x',
    'cmd=get kvsname=%KVS% key=card-0',
    'cmd=barrier_in',
    'cmd=get kvsname=%KVS% key=card-0',
    'cmd=get kvsname=%KVS% key=PMI_process_mapping',
    'cmd=get kvsname=%KVS% key=nobody-put-this',
    'cmd=put kvsname=someone-else key=k value=v',
    'cmd=finalize',
  ]);
  t.equal(code, 0, stderr);
  t.same(
    answers,
    [
      'cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1',
      'cmd=maxes rc=0 kvsname_max=64 keylen_max=64 vallen_max=1024',
      'cmd=appnum rc=0 appnum=0',
      `cmd=my_kvsname rc=0 kvsname=${job.id}`,
      'cmd=universe_size rc=0 size=1',
      'cmd=put_result rc=0',
      'cmd=get_result rc=-1 msg=key_card-0_not_found',
      'cmd=barrier_out rc=0',
      'cmd=get_result rc=0 value=addr#10.0.0.1$port#4711=x',
      'cmd=get_result rc=0 value=(vector,(0,1,1))',
      'cmd=get_result rc=-1 msg=key_nobody-put-this_not_found',
      'cmd=put_result rc=-1 msg=unknown_kvsname_someone-else',
      'cmd=finalize_ack rc=0',
    ],
    'a put becomes visible at the barrier, not before',
  );
  t.equal(job.state, 'succeeded');
  t.equal(job.mpi, 'pmi1', 'PMI is on by default');
});

t.test('unknown commands and requests after finalize get error answers; the rank goes on', { skip }, async (t) => {
  const cluster = await localCluster(t, ['solo']);
  const { answers, job } = await converse(cluster, [
    'cmd=init pmi_version=1 pmi_subversion=1',
    'cmd=frobnicate now=yes',
    'cmd=publish_name service=s port=p',
    'cmd=get_maxes',
    'cmd=finalize',
    'cmd=put kvsname=%KVS% key=late value=v',
    'cmd=barrier_in',
  ]);
  t.same(answers, [
    'cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1',
    'cmd=error rc=-1 msg=unknown_command_frobnicate',
    'cmd=publish_name_result rc=-1 msg=publish_name_is_not_supported_by_rankd',
    'cmd=maxes rc=0 kvsname_max=64 keylen_max=64 vallen_max=1024',
    'cmd=finalize_ack rc=0',
    'cmd=put_result rc=-1 msg=put_after_finalize',
    'cmd=barrier_out rc=-1 msg=barrier_in_after_finalize',
  ]);
  t.equal(job.state, 'succeeded', 'a rank that finalized and exited 0 succeeded');
});

t.test('PMI-2 clients are told this server speaks PMI-1', { skip }, async (t) => {
  const cluster = await localCluster(t, ['solo']);
  const { answers } = await converse(cluster, ['cmd=init pmi_version=2 pmi_subversion=0'], ['--fail-policy', 'wait']);
  t.same(answers, [
    'cmd=response_to_init rc=-1 pmi_version=1 pmi_subversion=1 msg=this_server_speaks_PMI-1,_not_PMI-2',
  ]);
});

t.test('garbage, over-long lines and endless input end that job only, with the reason', { skip }, async (t) => {
  const cluster = await localCluster(t, ['solo']);
  // a job that must be untouched by the others: it waits in a PMI barrier of its own
  const bystander = runCli(
    [
      'run',
      '-q',
      '--no-label',
      '--share',
      '-n',
      '1',
      '--',
      PYTHON,
      PMI_CLIENT,
      'cmd=init pmi_version=1 pmi_subversion=1',
      'cmd=barrier_in',
      'cmd=finalize',
    ],
    cluster.env,
  );

  const cases: Array<[string, string[], RegExp, RegExp]> = [
    [
      'not key=value',
      ['this is not PMI', '@EOF'],
      /^cmd=error rc=-1 msg=/,
      /broke the PMI protocol: "this" is not key=value/,
    ],
    ['no cmd', ['key=value other=1', '@EOF'], /^cmd=error rc=-1 msg=no_cmd/, /broke the PMI protocol: no cmd=/],
    [
      'a 2,000-byte line',
      ['cmd=init pmi_version=1 pmi_subversion=1', '@LONG:2000', '@EOF'],
      /^cmd=error rc=-1 msg=a_line_of_2000_bytes/,
      /a line of 2000 bytes \(the PMI-1 maximum is 1024\)/,
    ],
    [
      '3,000 bytes without a newline',
      ['@RAW:3000', '@EOF'],
      /^cmd=error rc=-1 msg=more_than_1024_bytes/,
      /more than 1024 bytes without a newline/,
    ],
  ];
  for (const [what, lines, answer, reason] of cases) {
    const { code, answers, job } = await converse(cluster, lines);
    t.match(answers.at(-2) ?? '', answer, `${what}: an error answer`);
    t.equal(answers.at(-1), 'closed', `${what}: then the server hangs up`);
    t.equal(job.state, 'failed', `${what}: the job fails`);
    t.match(job.reason, reason, `${what}: and says why`);
    t.equal(code, 1);
  }
  const b = await bystander;
  t.equal(b.code, 0, 'the bystander job completed its own barrier and finalize');
  t.same(b.stdout.split('\n').filter(Boolean), [
    'answer: cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1',
    'answer: cmd=barrier_out rc=0',
    'answer: cmd=finalize_ack rc=0',
  ]);
  await waitForNode(cluster.controller, 'solo', 'ready');
  t.equal(cluster.agents[0]!.child.exitCode, null, 'the agent is still running');
});

t.test('under --pty the rank finds its server by PMI_PORT and a single-use PMI_ID', { skip }, async (t) => {
  const cluster = await localCluster(t, ['solo']);
  const { answers, job } = await converse(
    cluster,
    ['cmd=init pmi_version=1 pmi_subversion=1', 'cmd=barrier_in', 'cmd=finalize'],
    ['--pty'],
  );
  t.same(answers, [
    'cmd=initack rc=0',
    'cmd=set size=1',
    'cmd=set rank=0',
    'cmd=set debug=0',
    'cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1',
    'cmd=barrier_out rc=0',
    'cmd=finalize_ack rc=0',
  ]);
  t.equal(job.state, 'succeeded');

  // an id the agent never gave out (the job's own env overrides the server's) opens nothing
  const forged = await converse(
    cluster,
    ['cmd=init pmi_version=1 pmi_subversion=1', '@EOF'],
    ['--pty', '--env', 'PMI_ID=12345'],
  );
  t.match(forged.answers[0] ?? '', /^cmd=error rc=-1 msg=a_PMI_ID_this_agent_did_not_give_out/);
  t.equal(forged.answers.at(-1), 'closed');
});

t.test('a connection to the PMI port that never names its rank is closed', { skip }, async (t) => {
  const cluster = await localCluster(t, ['solo']);
  // the rank stays (without connecting) so that the port is still open: it closes once no rank can come
  const job = await cluster.controller.api<{ id: string }>('/v1/jobs', {
    method: 'POST',
    body: { command: ['sh', '-c', 'echo "$PMI_PORT"; sleep 60'], placement: { ntasks: 1 }, pty: true },
  });
  t.teardown(() => cluster.controller.api(`/v1/jobs/${job.body.id}/cancel`, { method: 'POST', body: {} }));
  const port = await waitUntil(
    'the rank prints its PMI_PORT',
    30_000,
    async () =>
      /^127\.0\.0\.1:(\d+)\r?$/m.exec((await cluster.controller.api<string>(`/v1/jobs/${job.body.id}/logs`)).body)?.[1],
  );
  t.ok(port, 'the rank was told its PMI_PORT');
  const socket = net.connect(Number(port), '127.0.0.1');
  let answer = '';
  socket.setEncoding('latin1').on('data', (d: string) => (answer += d));
  const closed = await new Promise<boolean>((resolve) => {
    const bound = setTimeout(() => resolve(false), 30_000);
    socket.once('close', () => {
      clearTimeout(bound);
      resolve(true);
    });
  });
  socket.destroy();
  t.ok(closed, 'the agent hung up');
  t.match(answer, /^cmd=error rc=-1 msg=no_cmd_initack_within_10_s/);
  await waitForNode(cluster.controller, 'solo', 'ready');
});

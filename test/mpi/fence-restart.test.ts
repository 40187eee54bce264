// The controller is SIGKILLed while a fence is open (one node in the barrier, the other
// not yet) and started again: the waiting agent sends its fence again on reconnect, the
// late node fences, and both ranks read both cards.
import { existsSync } from 'node:fs';
import t from 'tap';
import { startAgent, startController, waitForNode, waitUntil } from '../helpers/daemons.js';
import { PMI_CLIENT, PYTHON, type MpiJobView } from './helpers.js';

const skip = existsSync(PYTHON) ? false : `${PYTHON} is missing`;
// the agents' lease is 12 heartbeats: long enough to outlast the restart
const HEARTBEAT_MS = 1000;

t.test('a fence survives a controller restart while it is open', { skip }, async (t) => {
  const first = await startController({ heartbeatMs: HEARTBEAT_MS });
  const port = Number(new URL(first.url).port);
  let controller = first;
  t.teardown(() => controller.stop());
  for (const name of ['node-a', 'node-b']) {
    const agent = startAgent(first, { name });
    t.teardown(() => agent.stop());
    await waitForNode(first, name, 'ready');
  }
  const script = [
    'cmd=init pmi_version=1 pmi_subversion=1',
    'cmd=get_my_kvsname',
    'cmd=put kvsname=%KVS% key=card-%RANK% value=from-%RANK%',
    // rank 1 (node-b) comes to the barrier only after the restart
    '@SLEEP:1:8',
    'cmd=barrier_in',
    'cmd=get kvsname=%KVS% key=card-0',
    'cmd=get kvsname=%KVS% key=card-1',
    'cmd=finalize',
  ];
  const submitted = await first.api<MpiJobView>('/v1/jobs', {
    method: 'POST',
    body: { command: [PYTHON, PMI_CLIENT, ...script], placement: { nodes: 2, ranksPerNode: 1 } },
  });
  t.equal(submitted.status, 201, 'the job is accepted');
  const id = submitted.body.id;
  // rank 0 has put its card: its barrier_in is the next line it sends
  await waitUntil('rank 0 to have put its card', 20_000, async () => {
    const log = await first.api<string>(`/v1/jobs/${id}/logs?rank=0&stream=stdout`);
    return typeof log.body === 'string' && log.body.includes('answer: cmd=put_result rc=0');
  });
  await first.stop('SIGKILL');
  controller = await startController({ dataDir: first.dataDir, port, heartbeatMs: HEARTBEAT_MS });

  const job = await waitUntil('the job to end', 60_000, async () => {
    const view = await controller.api<MpiJobView>(`/v1/jobs/${id}`);
    return ['succeeded', 'failed', 'lost', 'cancelled'].includes(view.body.state) ? view.body : undefined;
  });
  t.equal(job.state, 'succeeded', job.reason);
  for (const rank of [0, 1]) {
    const log = (await controller.api<string>(`/v1/jobs/${id}/logs?rank=${rank}&stream=stdout`)).body;
    t.match(
      log,
      /answer: cmd=barrier_out rc=0\nanswer: cmd=get_result rc=0 value=from-0\nanswer: cmd=get_result rc=0 value=from-1\n/,
      `rank ${rank} read both cards after the restart`,
    );
  }
});

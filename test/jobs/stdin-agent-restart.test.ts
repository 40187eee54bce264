// A rank reading `rankd run`'s stdin when its agent is SIGKILLed and restarted: the rank
// runs on (as every rank does) and its stdin ends there: it reads what had arrived, then
// EOF. The new agent adopts it; the client hears that no rank takes more, stops reading its
// stdin (which stays open) without an error, and exits with the job's code.
import { spawn } from 'node:child_process';
import t from 'tap';
import { CLI, runCli, startAgent, startController, waitForNode, waitUntil } from '../helpers/daemons.js';
import { processAlive } from '../helpers/cluster.js';
import { scratchDir } from '../helpers/scratch.js';

t.test("an agent restart ends its ranks' stdin; the ranks run on", async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const spoolDir = scratchDir('rankd-spool-');
  let agent = startAgent(controller, { name: 'solo', spoolDir });
  t.teardown(() => agent.stop());
  await waitForNode(controller, 'solo', 'ready');
  const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...controller.clientEnv, RANKD_HOME: controller.dataDir };

  const client = spawn(
    process.execPath,
    [CLI, 'run', '--no-label', '-n', '1', '--', 'sh', '-c', 'n=$(wc -c); echo "read $n"'],
    { env, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  t.teardown(() => {
    if (client.exitCode === null && client.signalCode === null) client.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  client.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  client.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => client.once('close', (c) => resolve(c)));
  client.stdin.write('abc');
  const id = await waitUntil('the job to start', 20_000, () => /rankd: job (\S+)/.exec(stderr)?.[1]);
  const job = async () =>
    JSON.parse((await runCli(['job', id, '--json'], env)).stdout) as {
      state: string;
      ranks: Array<{ state: string; pid: number | null }>;
    };
  const running = await waitUntil('its rank to run', 20_000, async () => {
    const v = await job();
    return v.ranks[0]?.state === 'running' ? v.ranks[0] : undefined;
  });
  // the three bytes reach the rank's socket long before this
  await new Promise((r) => setTimeout(r, 1000));

  await agent.stop('SIGKILL');
  await waitUntil('the rank to read EOF and end', 20_000, () => !processAlive(running.pid!));
  agent = startAgent(controller, { name: 'solo', spoolDir });
  await waitForNode(controller, 'solo', 'ready');

  const code = await exited;
  t.equal(code, 0, `the client exits with the job's code, 0 (stderr: ${stderr})`);
  t.equal(stdout, 'read 3\n', 'the rank read the 3 bytes that had arrived, then EOF');
  t.notMatch(stderr, /stdin/, 'and the client said nothing about its stdin');
  t.equal((await job()).state, 'succeeded', 'the adopted rank ended the job');
  client.stdin.destroy();
});

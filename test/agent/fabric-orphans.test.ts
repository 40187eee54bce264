// An agent killed outright (OOM, SIGKILL) must not leave its probe programs behind: a probe
// server waits for a client that will never come. Each program starts under setpriv
// --pdeathsig KILL, so the kernel ends it with the agent.
import t from 'tap';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isListening } from '#agent/fabric/listening';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const PROBES = join(REPO, 'packages/agent/dist/fabric/fabric-probes.js');
const PINO = join(REPO, 'node_modules/pino/pino.js');
const PORT = 29_871;

async function until(what: string, ms: number, ok: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await ok()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

t.test('a probe server dies with the agent that started it', async (t) => {
  t.notOk(await isListening(PORT), `nothing listens on ${PORT} before the test`);
  // a stand-in for the agent: it starts a real iperf3 server through FabricProbes, then waits
  const script = `
    const { FabricProbes } = await import(${JSON.stringify(PROBES)});
    const { default: pino } = await import(${JSON.stringify(PINO)});
    const probes = new FabricProbes(pino({ level: 'silent' }));
    const r = await probes.serve({ type: 'fabric.serve', id: 's1', tool: 'iperf3', durationS: 1,
      address: '127.0.0.1', ports: [${PORT}], ttlMs: 600000 });
    process.stdout.write(JSON.stringify(r) + '\\n');
    setInterval(() => {}, 1000);`;
  const agent = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => {
    if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
  });
  let out = '';
  agent.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  await until('the probe server to listen', 10_000, async () => out.includes('\n'));
  t.same(JSON.parse(out), { type: 'fabric.serving', port: PORT }, 'the server was started');
  t.ok(await isListening(PORT), 'iperf3 listens');

  agent.kill('SIGKILL');
  await until('the orphaned server to be gone', 5_000, async () => !(await isListening(PORT)));
  t.pass('the server ended with its agent');
});

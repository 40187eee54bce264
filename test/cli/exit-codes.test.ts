// rankd's exit codes are distinct and documented: usage, unreachable, unauthorized, remote failure.
import t from 'tap';
import { runCli, startController } from '../helpers/daemons.js';

t.test('usage errors exit 64 and say what is wrong on stderr', async (t) => {
  const r = await runCli(['frobnicate']);
  t.equal(r.code, 64);
  t.match(r.stderr, /unknown command/);
  t.equal(r.stdout, '');
});

t.test('no controller configured is a usage error naming the fix', async (t) => {
  const r = await runCli(['nodes'], { RANKD_URL: '', RANKD_TOKEN: '', RANKD_HOME: '/nonexistent-rankd-home' });
  t.equal(r.code, 64);
  t.match(r.stderr, /RANKD_URL/);
});

t.test('an unreachable controller exits 69', async (t) => {
  // port 9 on loopback: nothing listens there
  const r = await runCli(['nodes'], { RANKD_URL: 'https://127.0.0.1:9', RANKD_TOKEN: 'x' });
  t.equal(r.code, 69);
  t.match(r.stderr, /cannot reach the controller at https:\/\/127\.0\.0\.1:9/);
});

t.test('a wrong token exits 77', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const bad = await runCli(['nodes'], { ...controller.clientEnv, RANKD_TOKEN: 'wrong' });
  t.equal(bad.code, 77);
  t.match(bad.stderr, /not authorized/);
  const ok = await runCli(['nodes'], controller.clientEnv);
  t.equal(ok.code, 0);
  t.equal(ok.stderr, '');
});

t.test('version', async (t) => {
  const r = await runCli(['version']);
  t.equal(r.code, 0);
  t.match(r.stdout, /^rankd \d+\.\d+\.\d+ \(protocol rankd\.v1/);
});

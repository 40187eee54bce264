// --pty ranks run under node-pty and see a terminal; their output lands in the same spool.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { allowedCpus, launch, readSpoolFile, runner, until } from './helpers.js';

t.test('a PTY rank runs tty and sees a terminal of the asked size', async (t) => {
  const r = runner(t);
  const s = await r.start(launch('pty', 0, ['tty'], { pty: true }));
  t.equal(s.supervisorPid, null, 'the agent holds the terminal itself');
  t.match(await r.exited('pty', 0), { outcome: 'exited', code: 0 });
  t.match(readSpoolFile(r, 'pty', 0, 'stdout'), /^\/dev\/pts\/\d+\r?\n$/);
  t.equal(readSpoolFile(r, 'pty', 0, 'stderr'), '', 'a terminal has one stream');

  await r.start(
    launch('pty', 1, ['sh', '-c', 'test -t 0 && test -t 1 && echo terminal; stty size; exit 4'], {
      pty: true,
      cols: 100,
      rows: 30,
    }),
  );
  t.match(await r.exited('pty', 1), { outcome: 'exited', code: 4 });
  t.match(readSpoolFile(r, 'pty', 1, 'stdout'), /^terminal\r?\n30 100\r?\n$/);
});

t.test('a PTY rank is pinned, gets its environment and can be aborted', async (t) => {
  const r = runner(t);
  const cpu = allowedCpus().at(-1)!;
  const armed = path.join(r.spool.root, 'armed');
  const s = await r.start(
    launch('ptyabort', 0, ['sh', '-c', `echo "V=$JOB_VAR"; touch ${armed}; exec sleep 300`], {
      pty: true,
      cpus: [cpu],
      env: { PATH: '/usr/bin:/bin', JOB_VAR: 'kept', PERL5OPT: '-Mnonexistent' },
    }),
  );
  t.same(s.binding.cpus, [cpu]);
  t.equal(s.binding.verified, true);
  await until(() => fs.existsSync(armed), 'the rank to run');
  const [exit] = await r.abortJob('ptyabort', 1000);
  t.match(exit, { outcome: 'signaled', signal: 'SIGTERM' });
  t.match(
    readSpoolFile(r, 'ptyabort', 0, 'stdout'),
    /^V=kept\r?\n/,
    "the job's PERL5OPT did not reach the supervisor, its other variables reached the rank",
  );
});

t.test('a PTY rank that prints a lot and exits at once keeps its last lines', async (t) => {
  const r = runner(t);
  await r.start(launch('ptyflood', 0, ['seq', '1', '200000'], { pty: true }));
  t.match(await r.exited('ptyflood', 0), { outcome: 'exited', code: 0 });
  const lines = readSpoolFile(r, 'ptyflood', 0, 'stdout').split(/\r?\n/);
  t.equal(lines.at(-2), '200000', 'the last line is there');
  t.equal(lines.length - 1, 200000, 'and every line before it');
});

// `rankd check net` as a user meets it, the built CLI against a real controller and one real
// agent: bad flags exit 64 naming the flag before any request is sent, `--last` with nothing
// stored says so, and a check of one node says there is nothing to measure and exits 0.
import t from 'tap';
import { runCli } from '../helpers/daemons.js';
import { localCluster } from '../helpers/cluster.js';

const { controller, env } = await localCluster(t, ['solo1']);

/** REST requests the controller has answered, its scrapes of /metrics left out. */
async function requestsAnswered(): Promise<number> {
  const r = await controller.api<string>('/metrics');
  if (r.status !== 200) throw new Error(`GET /metrics: ${r.status}`);
  let total = 0;
  for (const line of String(r.body).split('\n')) {
    const m = /^rankd_http_requests_total\{([^}]*)\} (\d+)$/.exec(line);
    if (m && !m[1]!.includes('route="/metrics"')) total += Number(m[2]);
  }
  return total;
}

const badFlags: Array<[string[], RegExp]> = [
  [['--duration', '0'], /^rankd: --duration: 0 is out of range \(1 to 60\)\n$/],
  [['--duration', '61'], /^rankd: --duration: 61 is out of range \(1 to 60\)\n$/],
  [['--duration', '1.5'], /^rankd: --duration: "1\.5" is not a whole number/],
  [['--threshold', '150%'], /^rankd: --threshold: "150%" is not a fraction between 0\.05 and 1 \(or a percentage/],
  [['--threshold', '2'], /^rankd: --threshold: "2" is not a fraction between 0\.05 and 1/],
  [['--threshold', 'x'], /^rankd: --threshold: "x" is not a fraction/],
  [
    ['--last', 'solo*'],
    /^rankd: --last prints the stored check: it takes no pattern, --rail, --duration, --threshold or --drain\n$/,
  ],
  [['--last', '--drain'], /^rankd: --last prints the stored check: it takes no pattern/],
  // a threshold would not re-judge the stored links: taking it silently would let the user think it did
  [['--last', '--threshold', '0.5'], /^rankd: --last prints the stored check: it takes no pattern/],
];

for (const [flags, said] of badFlags) {
  t.test(`rankd check net ${flags.join(' ')}: exit 64, naming the flag, nothing sent`, async (t) => {
    const before = await requestsAnswered();
    const r = await runCli(['check', 'net', ...flags], env);
    t.equal(r.code, 64, `exit 64 (usage); stderr: ${r.stderr}`);
    t.match(r.stderr, said);
    t.equal(r.stdout, '', 'nothing on stdout');
    t.equal(await requestsAnswered(), before, 'no request reached the controller');
  });
}

t.test('--last with no check stored says so', async (t) => {
  const r = await runCli(['check', 'net', '--last'], env);
  t.equal(r.code, 65, `refused (65); stderr: ${r.stderr}`);
  t.equal(r.stderr, 'rankd: no net check is stored yet: run `rankd check net`\n');
  t.equal(r.stdout, '');
});

t.test('one node selected: a message, exit 0, and the check is stored as such', async (t) => {
  const r = await runCli(['check', 'net', 'solo1', '--duration', '1'], env);
  t.equal(r.code, 0, `exit 0; stderr: ${r.stderr}`);
  t.match(
    r.stdout,
    /one node selected \(solo1\): a net check measures pairs, so there is nothing to measure\n$/,
    'the message says why nothing was measured',
  );
  const json = await runCli(['check', 'net', '--last', '--json'], env);
  t.equal(json.code, 0, json.stderr);
  const last = JSON.parse(json.stdout) as { rounds: number; links: unknown[]; flagged: string[]; message: string };
  t.same([last.rounds, last.links, last.flagged], [0, [], []], 'no round, no link, nothing flagged');
  t.match(last.message, /^one node selected/);
});

t.test('a pattern that selects nothing is refused, naming the pattern', async (t) => {
  const r = await runCli(['check', 'net', 'nosuchhost*', '--duration', '1'], env);
  t.equal(r.code, 65, 'refused (65)');
  t.match(r.stderr, /"nosuchhost\*" matches no group, host or node \(RANKD_PATTERN_UNKNOWN\)/);
  t.equal(r.stdout, '');
});

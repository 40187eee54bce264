// The orted launch grammar (packages/protocol/src/orted-launch.ts) against what Open MPI's
// own mpirun asks its remote shell for on this machine, and against hostile variations of
// it: the launcher node keeps five checked values, the controller builds the orted's
// arguments from them and the job's settings, and the target agent takes exactly those.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import {
  checkOrtedArgs,
  checkOrtedLaunch,
  hnpAddresses,
  ortedArgs,
  parseOrtedRequest,
  type OrtedLaunch,
} from '@rankd/protocol';
import { openMpiUnsupported } from './helpers.js';

const skip = openMpiUnsupported();

/** The arguments Open MPI 4.1's mpirun gives its rsh agent for a daemon on `fakehost`, captured by a real mpirun run (the agent records them and fails). */
function captureMpirunRequest(t: Test, env: Record<string, string> = {}): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-orted-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const agent = join(dir, 'rsh');
  const out = join(dir, 'args');
  writeFileSync(agent, `#!/bin/sh\nprintf '%s\\0' "$@" > '${out}'\nexit 1\n`);
  chmodSync(agent, 0o700);
  writeFileSync(join(dir, 'hostfile'), 'fakehost\n');
  const asRoot = process.getuid?.() === 0 ? ['--allow-run-as-root'] : [];
  // by its full path, as the agent runs it: mpirun then prefixes the orted with its PATH settings
  const mpirun = spawnSync(
    '/usr/bin/mpirun.openmpi',
    [
      ...asRoot,
      '--mca',
      'plm_rsh_agent',
      agent,
      '--mca',
      'plm_rsh_no_tree_spawn',
      '1',
      '--mca',
      'orte_leave_session_attached',
      '1',
      '--hostfile',
      join(dir, 'hostfile'),
      '--mca',
      'rmaps',
      'seq',
      '--bind-to',
      'none',
      '-np',
      '1',
      'true',
    ],
    {
      env: { PATH: '/usr/bin:/bin', HOME: dir, TMPDIR: dir, ...env },
      encoding: 'utf8',
      timeout: 30_000,
    },
  );
  t.not(mpirun.status, 0, 'mpirun fails: its daemon never came');
  const args = readFileSync(out, 'utf8').split('\0').slice(0, -1);
  t.equal(args[0], 'fakehost', 'the host comes first');
  return args.slice(1);
}

t.test(
  "mpirun's own request on this machine parses into its launch, and the controller's arguments carry it",
  { skip: skip ?? false },
  async (t) => {
    const args = captureMpirunRequest(t, { OMPI_MCA_btl: 'self,tcp', OMPI_MCA_btl_tcp_if_include: 'lo' });
    t.match(args[0], /orted$/, `the program word (${args[0]})`);
    const launch = parseOrtedRequest(args);
    t.match(launch, { vpid: 1, numProcs: 2 });
    t.match(launch.nodeRegex, /fakehost/);
    t.ok(launch.hnpUri.startsWith(`${launch.jobFamily}.0;tcp`), launch.hnpUri);
    t.ok(hnpAddresses(launch.hnpUri).length >= 1, `the HNP's addresses: ${hnpAddresses(launch.hnpUri).join(', ')}`);

    const env = {
      OMPI_MCA_btl: 'self,tcp',
      OMPI_MCA_btl_tcp_if_include: 'lo',
      OMPI_MCA_plm_rsh_agent: '/tmp/evil',
      PATH: '/x',
    };
    const built = ortedArgs(launch, env);
    t.same(built.slice(0, 3), ['-mca', 'orte_leave_session_attached', '1']);
    for (const [key, value] of [
      ['ess_base_jobid', launch.jobFamily],
      ['ess_base_vpid', '1'],
      ['ess_base_num_procs', '2'],
      ['orte_hnp_uri', launch.hnpUri],
      ['btl', 'self,tcp'],
    ]) {
      t.ok(
        built.some((a, i) => a === '-mca' && built[i + 1] === key && built[i + 2] === value),
        `-mca ${key} ${value}`,
      );
    }
    t.notOk(built.includes('plm_rsh_agent'), "a job's own rsh agent setting is never passed on");
    // every value mpirun passed on is there, unquoted, except the rsh agent's path, which no orted needs
    const passed = new Map<string, string>();
    for (let i = 1; i + 2 < args.length; i += 3) passed.set(args[i + 1]!, args[i + 2]!.replace(/^"(.*)"$/, '$1'));
    for (const [key, value] of passed) {
      if (key === 'plm_rsh_agent') continue;
      t.ok(
        built.some((a, i) => a === '-mca' && built[i + 1] === key && built[i + 2] === value),
        `mpirun's -mca ${key} ${value} is built too`,
      );
    }
    t.same(checkOrtedArgs(built, env), launch, "the target agent's own record of the job accepts them");
  },
);

const launch: OrtedLaunch = {
  jobFamily: '2024669184',
  vpid: 1,
  numProcs: 3,
  nodeRegex: 'vm,h[1:1-3]@0(3)',
  hnpUri: '2024669184.0;tcp://192.0.2.2:38787;tcp6://[fd00::2]:44529',
};
const request = (launch: OrtedLaunch, program = ' orted'): string[] => [
  program,
  ...['orte_leave_session_attached', '1', 'ess', 'env'].flatMap((v, i, a) =>
    i % 2 === 0 ? ['-mca', v, `"${a[i + 1]}"`] : [],
  ),
  '-mca',
  'ess_base_jobid',
  `"${launch.jobFamily}"`,
  '-mca',
  'ess_base_vpid',
  String(launch.vpid),
  '-mca',
  'ess_base_num_procs',
  `"${launch.numProcs}"`,
  '-mca',
  'orte_node_regex',
  `"${launch.nodeRegex}"`,
  '-mca',
  'orte_hnp_uri',
  `"${launch.hnpUri}"`,
  '--mca',
  'plm_rsh_agent',
  '"/usr/lib/rankd/rsh-helper.pl"',
];

t.test('the launcher node refuses what is not an orted launch', async (t) => {
  t.same(parseOrtedRequest(request(launch)), launch, 'the well-formed request');
  t.same(
    parseOrtedRequest(
      request(
        launch,
        '  PATH=/usr/bin:$PATH ; export PATH ; LD_LIBRARY_PATH=/usr/lib:${LD_LIBRARY_PATH:-} ; export LD_LIBRARY_PATH ;   /usr/bin/orted',
      ),
    ),
    launch,
    "with mpirun's PATH prelude",
  );
  const refused: Array<[string, string[], RegExp]> = [
    ['another program', request(launch, 'sh -c "touch /tmp/x"'), /not an orted launch/],
    [
      'a command in the prelude',
      request(launch, 'PATH=/usr/bin ; touch /tmp/x ; /usr/bin/orted'),
      /not an orted launch/,
    ],
    ['a substitution in the program word', request(launch, '$(touch /tmp/x)/orted'), /not an orted launch/],
    ['a stray word', [...request(launch), 'extra'], /unexpected orted argument/],
    ['a launch value twice', [...request(launch), '-mca', 'ess_base_vpid', '2'], /given twice/],
    ['a missing value', request(launch).slice(0, -6), /bad orted launch/],
    ['shell text in the node regex', request({ ...launch, nodeRegex: 'h1;touch /tmp/x' }), /nodeRegex/],
    ['a substitution in the HNP URI', request({ ...launch, hnpUri: '2024669184.0;tcp://$(id):1' }), /hnpUri/],
    ['a vpid beyond the daemons', request({ ...launch, vpid: 3 }), /not below the number of daemons/],
    ['an HNP of another job family', request({ ...launch, hnpUri: '1.0;tcp://192.0.2.2:1' }), /not of job family/],
  ];
  for (const [what, args, why] of refused) t.throws(() => parseOrtedRequest(args), why, what);
  t.throws(() => checkOrtedLaunch({ ...launch, command: 'x' }), /bad orted launch/, 'no field beyond the five');
});

t.test('the target agent takes exactly the arguments its record of the job makes, nothing else', async (t) => {
  const env = { OMPI_MCA_btl: 'self,tcp' };
  const args = ortedArgs(launch, env);
  t.same(checkOrtedArgs(args, env), launch);
  const tampered: Array<[string, string[], Record<string, string>]> = [
    ['an extra parameter', [...args, '-mca', 'plm_rsh_agent', '/tmp/evil'], env],
    ['a setting the job does not have', args, {}],
    ['a setting changed', args.map((a) => (a === 'self,tcp' ? 'self,sm' : a)), env],
    ['a program in front', ['/bin/sh', ...args], env],
    ['the order changed', [...args.slice(3), ...args.slice(0, 3)], env],
    ['a bad launch value', args.map((a) => (a === launch.nodeRegex ? 'x;y' : a)), env],
  ];
  for (const [what, bad, record] of tampered) t.throws(() => checkOrtedArgs(bad, record), /orted/, what);
});

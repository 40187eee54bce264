// The placement flags → PlacementSpec translation that `rankd plan` and `rankd run`
// share, parsed by a real commander program in-process.
import t from 'tap';
import { Command } from 'commander';
import { Compile } from 'typebox/compile';
import { PlacementSpec } from '@rankd/protocol';
import { addPlacementOptions, placementSpecFromOptions, type PlacementOptions } from '#cli/placement-flags';
import { CliError, ExitCode } from '#cli/exit-codes';

function parse(args: string[]): PlacementSpec {
  let opts: PlacementOptions = {};
  const cmd = addPlacementOptions(new Command('x').exitOverride().configureOutput({ writeErr: () => {} })).action(
    (o: PlacementOptions) => {
      opts = o;
    },
  );
  cmd.parse(args, { from: 'user' });
  return placementSpecFromOptions(opts);
}

const validSpec = Compile(PlacementSpec);

t.test('every flag lands in its spec field, and nothing else appears', async (t) => {
  const spec = parse([
    '-N',
    '2',
    '--group',
    'spr*',
    '-n',
    '4',
    '--ppn',
    '2',
    '--distribution',
    'cyclic',
    '-c',
    '48',
    '--ht',
    'all',
    '--comm-workers',
    '4',
    '--comm-on',
    'cores',
    '--mem-bind',
    'none',
    '--nic',
    'irdma-*',
    '--gpus-per-rank',
    '0',
    '--gpu-bind',
    'visible',
    '--master-port',
    '29600',
    '--env',
    'A=1',
    '--env',
    'B=x=y',
    '--env',
    'C=',
    '--env-profile',
    'mpi',
  ]);
  t.same(spec, {
    nodes: 2,
    group: 'spr*',
    ntasks: 4,
    ranksPerNode: 2,
    distribution: 'cyclic',
    cpusPerRank: 48,
    ht: 'all',
    commWorkers: 4,
    commOn: 'cores',
    memBind: 'none',
    nic: 'irdma-*',
    gpusPerRank: 0,
    gpuBind: 'visible',
    masterPort: 29600,
    env: { A: '1', B: 'x=y', C: '' },
    envProfile: 'mpi',
  });
  t.ok(validSpec.Check(spec), 'the REST schema accepts what the flags build');
  t.same(parse([]), {});
  t.same(parse(['--nodelist', 'a, b,c', '--ranks-per-node', 'gpu']), {
    nodelist: ['a', 'b', 'c'],
    ranksPerNode: 'gpu',
  });
  t.same(parse(['--ppn', 'numa', '--ranks-per-node', 'numa']), { ranksPerNode: 'numa' });
});

t.test('mistakes are CliErrors with the usage exit code', async (t) => {
  const cases: [string[], RegExp][] = [
    [['--ppn', 'lots'], /--ppn takes a count or numa, socket or gpu, not "lots"/],
    [['--ppn', '2', '--ranks-per-node', '3'], /--ranks-per-node 3 and --ppn 2 disagree/],
    [['-c', '0'], /-c\/--cpus-per-rank must be between 1 and 65536, not 0/],
    [['-N', '1.5'], /-N\/--nodes takes a whole number, not "1.5"/],
    [['--master-port', '70000'], /--master-port must be between 1 and 65535/],
    [['--env', '1A=x'], /--env takes NAME=VALUE, not "1A=x"/],
    [['--env', 'NOVALUE'], /--env takes NAME=VALUE, not "NOVALUE"/],
    [['--nodelist', ' , '], /--nodelist is empty/],
    [['--nic', ' '], /--nic is empty/],
    [['--nodelist', 'a', '--group', 'b'], /--nodelist and --group both select nodes/],
  ];
  for (const [args, message] of cases) {
    const err = t.throws(() => parse(args)) as CliError;
    t.type(err, CliError, args.join(' '));
    t.equal(err.exitCode, ExitCode.Usage);
    t.match(err.message, message);
  }
  // choices are commander's own usage errors
  t.throws(() => parse(['--ht', 'some']), { code: 'commander.invalidArgument' });
});

// Host patterns as Ansible reads them, over an inventory parsed from a real INI file,
// plus the rankd rule that a term matching nothing is an error naming it.
import t from 'tap';
import { parseIni } from '#controller/fleet/inventory/ini';
import { groupMembers, hostMemberships } from '#controller/fleet/inventory/model';
import { matchPattern, type PatternUniverse } from '#controller/fleet/inventory/pattern';

const doc = parseIni(
  `[gpu]
dgx[01:04] rack=r1
[cpu]
spr[1:3] rack=r2
[login]
head
[rack2:children]
cpu
[empty]
[compute:children]
gpu
cpu
`,
  'patterns.ini',
);
const vars = hostMemberships(doc);
const universe: PatternUniverse = {
  hosts: Object.keys(doc.hosts),
  groups: new Map(Object.keys(doc.groups).map((g) => [g, groupMembers(doc, g)])),
  attributes: (h) => vars.get(h)?.vars ?? {},
};
const match = (p: string) => matchPattern(p, universe);

t.test('all, groups with children, hosts, globs and regexes', async (t) => {
  t.same(match('all'), ['dgx01', 'dgx02', 'dgx03', 'dgx04', 'spr1', 'spr2', 'spr3', 'head']);
  t.same(match('*'), match('all'));
  t.same(match('compute'), ['dgx01', 'dgx02', 'dgx03', 'dgx04', 'spr1', 'spr2', 'spr3']);
  t.same(match('rack2'), ['spr1', 'spr2', 'spr3'], 'a group of child groups');
  t.same(match('head'), ['head'], 'a host by name');
  t.same(match('dgx0*'), ['dgx01', 'dgx02', 'dgx03', 'dgx04']);
  t.same(match('spr?'), ['spr1', 'spr2', 'spr3']);
  t.same(
    match('c*'),
    ['dgx01', 'dgx02', 'dgx03', 'dgx04', 'spr1', 'spr2', 'spr3'],
    'globs match group names (cpu, compute) too',
  );
});

t.test('union, intersection and exclusion, in Ansible order', async (t) => {
  t.same(match('gpu:login'), ['dgx01', 'dgx02', 'dgx03', 'dgx04', 'head']);
  t.same(match('gpu,login'), match('gpu:login'), 'commas and colons both separate terms');
  t.same(match('compute:&rack2'), ['spr1', 'spr2', 'spr3']);
  t.same(match('compute:!gpu'), ['spr1', 'spr2', 'spr3']);
  t.same(match('!gpu:compute'), match('compute:!gpu'), 'exclusions apply after unions wherever they stand');
  t.same(match('!compute'), ['head'], 'a pattern of only exclusions starts from all');
  t.same(match('&gpu'), ['dgx01', 'dgx02', 'dgx03', 'dgx04']);
  t.same(match('gpu:!dgx02:!dgx03'), ['dgx01', 'dgx04']);
  t.same(match('empty'), [], 'an existing empty group is an empty answer, not an error');
  t.same(match('compute:&empty'), []);
});

t.test('subscripts (end inclusive, as in Ansible), regexes and key=value', async (t) => {
  t.same(match('gpu[0]'), ['dgx01']);
  t.same(match('gpu[-1]'), ['dgx04']);
  t.same(match('gpu[1:2]'), ['dgx02', 'dgx03']);
  t.same(match('gpu[2:]'), ['dgx03', 'dgx04']);
  t.same(match('gpu[:1]'), ['dgx01', 'dgx02']);
  t.same(match('~(dgx|spr)0?[13]$'), ['dgx01', 'dgx03', 'spr1', 'spr3']);
  t.same(match('rack=r2'), ['spr1', 'spr2', 'spr3']);
  t.same(match('compute:!rack=r2'), ['dgx01', 'dgx02', 'dgx03', 'dgx04']);
});

t.test('a term that matches nothing is an error that names it', async (t) => {
  t.throws(() => match('gpus'), { code: 'RANKD_PATTERN_UNKNOWN', message: '"gpus" matches no group, host or node' });
  t.throws(
    () => match('compute:!dgx99'),
    { code: 'RANKD_PATTERN_UNKNOWN', message: '"dgx99" matches no group, host or node' },
    'a typo in an exclusion must not widen the run',
  );
  t.throws(
    () => match('a*'),
    { code: 'RANKD_PATTERN_UNKNOWN', message: /"a\*"/ },
    'globs do not match the implicit group all',
  );
  t.throws(() => match('rack=r9'), { code: 'RANKD_PATTERN_UNKNOWN' });
  t.throws(() => match('gpu::cpu'), { code: 'RANKD_PATTERN_INVALID', message: /empty term/ });
  t.throws(() => match('gpu[7]'), {
    code: 'RANKD_PATTERN_INVALID',
    message: 'gpu[7]: index 7 is outside the 4 hosts of gpu',
  });
  t.throws(() => match('~(unclosed'), { code: 'RANKD_PATTERN_INVALID', message: /bad regular expression/ });
});

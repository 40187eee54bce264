// Inventory files as Ansible, Open MPI, MPICH and DeepSpeed write them, and the errors
// a malformed one gets: each names the file and the line.
import t from 'tap';
import { parseIni } from '#controller/fleet/inventory/ini';
import { parseHostfile } from '#controller/fleet/inventory/hostfile';
import { detectFormat, parseInventory } from '#controller/fleet/inventory/parse';
import { expandHostRange } from '#controller/fleet/inventory/host-range';
import { groupMembers, hostMemberships, mergeInventory } from '#controller/fleet/inventory/model';

// Seed 001's inventory, grown into what a real cluster file holds.
const SEED_INI = `# rankd inventory for the xFT cluster
jumpbox ansible_host=10.0.0.2

[all_hosts:vars]
ansible_ssh_pass=secret ; not used by rankd
model_dir = "/mnt/xFasterTransformer"

[all_hosts]
192.168.0.1
192.168.0.2 rank_hint=1

[gpu]
dgx[01:03] gpus=8
dgx04:2222 gpus='4' note="two words"

[cpu]
spr-[a:c]

[compute:children]
gpu
cpu

[compute:vars]
NCCL_DEBUG=INFO
`;

t.test('an Ansible INI inventory: groups, host vars, ranges, ports, group vars and children', async (t) => {
  const doc = parseIni(SEED_INI, 'hosts.ini');
  t.same(Object.keys(doc.hosts), [
    'jumpbox',
    '192.168.0.1',
    '192.168.0.2',
    'dgx01',
    'dgx02',
    'dgx03',
    'dgx04',
    'spr-a',
    'spr-b',
    'spr-c',
  ]);
  t.same(doc.groups['gpu']!.hosts, ['dgx01', 'dgx02', 'dgx03', 'dgx04']);
  t.same(doc.groups['compute']!.children, ['gpu', 'cpu']);
  t.same(groupMembers(doc, 'compute'), ['dgx01', 'dgx02', 'dgx03', 'dgx04', 'spr-a', 'spr-b', 'spr-c']);
  t.same(doc.groups['ungrouped']!.hosts, ['jumpbox'], 'hosts before the first section are ungrouped');
  t.same(
    doc.hosts['dgx04']!.vars,
    { gpus: '4', note: 'two words', ansible_port: '2222' },
    'quotes removed, port kept as ansible_port',
  );
  t.equal(
    doc.groups['all_hosts']!.vars['model_dir'],
    '/mnt/xFasterTransformer',
    'spaces around = and quotes are dropped',
  );
  t.equal(
    doc.groups['all_hosts']!.vars['ansible_ssh_pass'],
    'secret ; not used by rankd',
    'a vars value runs to the end of the line, as in Ansible',
  );
  t.ok(
    doc.groups['all']!.children.includes('compute') && !doc.groups['all']!.children.includes('gpu'),
    'only top-level groups hang under all',
  );

  const m = hostMemberships(doc);
  t.same(m.get('dgx01')!.groups.sort(), ['compute', 'gpu']);
  t.same(m.get('dgx01')!.vars, { NCCL_DEBUG: 'INFO', gpus: '8' }, 'group vars, then host vars');
  t.same(m.get('192.168.0.2')!.vars, {
    ansible_ssh_pass: 'secret ; not used by rankd',
    model_dir: '/mnt/xFasterTransformer',
    rank_hint: '1',
  });
});

t.test(
  'a child group declared after its parent names it is fine; vars flow from parent to child to host',
  async (t) => {
    const doc = parseIni(
      '[racks:children]\nrack1\n\n[racks:vars]\nfabric=roce\nlevel=racks\n\n[rack1]\nn1 level=host\nn2\n\n[rack1:vars]\nlevel=rack1\n',
      'r.ini',
    );
    const m = hostMemberships(doc);
    t.same(m.get('n1')!.vars, { fabric: 'roce', level: 'host' });
    t.same(m.get('n2')!.vars, { fabric: 'roce', level: 'rack1' });
  },
);

t.test('malformed INI files are refused with the file and line', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['[gpu\nn1\n', /^bad\.ini:1: section header "\[gpu" has no closing "\]"/],
    ['[gpu:hosts]\nn1\n', /^bad\.ini:1: section \[gpu:hosts\] has unknown type "hosts"/],
    [
      '[gpu]\nn1\n[gpu:vars]\nnot an assignment\n',
      /^bad\.ini:4: expected "key=value" in \[gpu:vars\], got "not an assignment"/,
    ],
    ['[gpu]\nn1 slots\n', /^bad\.ini:2: expected "key=value" after host n1, got "slots"/],
    ['[gpu]\nn1 note="unterminated\n', /^bad\.ini:2: no closing quotation/],
    ['[all:children]\ngpu\n\n[cpu]\nc1\n', /^bad\.ini:2: \[all:children\] names group gpu, which no section declares/],
    ['[gpu]\nn1\n\n[gpux:vars]\nk=v\n', /^bad\.ini:4: \[gpux:vars\] names group gpux, which no section declares/],
    ['[gpu]\nnode[10:01]\n', /^bad\.ini:2: host node\[10:01\]: range \[10:01\] ends before it begins/],
    ['[gpu]\nnode[01:9]\n', /^bad\.ini:2: host node\[01:9\]: range \[01:9\]: begin and end must have the same width/],
    ['[a:children]\nb\n[b:children]\na\n', /^bad\.ini: group a is its own ancestor \(a → b → a\)/],
    ['[g p]\n', /^bad\.ini:1: /],
  ];
  for (const [text, message] of cases) {
    t.throws(() => parseIni(text, 'bad.ini'), { code: 'RANKD_INVENTORY_PARSE', message }, JSON.stringify(text));
  }
});

t.test('host ranges expand as Ansible expands them', async (t) => {
  t.same(expandHostRange('node[01:04]'), ['node01', 'node02', 'node03', 'node04']);
  t.same(expandHostRange('n[1:10:4]'), ['n1', 'n5', 'n9']);
  t.same(expandHostRange('db-[a:c]-[1:2]'), ['db-a-1', 'db-a-2', 'db-b-1', 'db-b-2', 'db-c-1', 'db-c-2']);
  t.same(expandHostRange('plain'), ['plain']);
  t.throws(() => expandHostRange('n[a:3]'), /neither numeric nor a single-letter range/);
});

t.test('MPI and DeepSpeed hostfiles: slots, max_slots, MPICH host:N, comments', async (t) => {
  const text =
    '# DeepSpeed\nworker-1 slots=4\nworker-2 slots=4 max_slots=8  # two sockets\n\nworker-3:2\nworker-4\nworker-5 max-slots=6 slots=2\n';
  t.equal(detectFormat(text), 'hostfile');
  const doc = parseHostfile(text, 'hostfile', 'train');
  t.same(Object.keys(doc.hosts), ['worker-1', 'worker-2', 'worker-3', 'worker-4', 'worker-5']);
  t.same(doc.groups['train']!.hosts, Object.keys(doc.hosts));
  t.same(doc.hosts['worker-2']!.vars, { slots: '4', max_slots: '8' });
  t.same(doc.hosts['worker-3']!.vars, { slots: '2' });
  t.same(doc.hosts['worker-4']!.vars, { slots: '1' }, 'a bare host has one slot');
  t.same(doc.hosts['worker-5']!.vars, { max_slots: '6', slots: '2' });
  t.same(parseInventory({ content: 'n1:4\nn2:4\n' }).format, 'hostfile', 'MPICH host:N lines are a hostfile');
  t.same(parseInventory({ content: '[g]\nn1\n' }).format, 'ini');
  t.same(parseInventory({ content: 'n1\nn2\n' }).format, 'ini', 'a bare list is read as ungrouped INI hosts');
});

t.test('malformed hostfiles are refused with the file and line', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['n1 slots=4\nn2 slots=four\n', /^hf:2: slots=four is not a positive integer/],
    ['n1 slots=0\n', /^hf:1: slots=0 is not a positive integer/],
    ['n1 slots=4 cpus=8\n', /^hf:1: unexpected "cpus=8" after host n1/],
    ['n1 slots=4\n\nn1 slots=2\n', /^hf:3: host n1 is listed twice \(first on line 1\)/],
    ['n1 slots=4 max_slots=2\n', /^hf:1: host n1: max_slots=2 is below slots=4/],
    ['n1 slots=1 slots=2\n', /^hf:1: slots given twice for host n1/],
    ['bad/host slots=1\n', /^hf:1: "bad\/host" is not a host name/],
  ];
  for (const [text, message] of cases) {
    t.throws(() => parseHostfile(text, 'hf'), { code: 'RANKD_INVENTORY_PARSE', message }, JSON.stringify(text));
  }
});

t.test('merging adds hosts and groups; later vars win', async (t) => {
  const a = parseIni('[gpu]\nn1 k=1\n', 'a');
  const b = parseHostfile('n1 slots=8\nn2 slots=8\n', 'b', 'gpu');
  const m = mergeInventory(a, b);
  t.same(m.groups['gpu']!.hosts, ['n1', 'n2']);
  t.same(m.hosts['n1']!.vars, { k: '1', slots: '8' });
  t.same(m.groups['ungrouped']!.hosts, []);
});

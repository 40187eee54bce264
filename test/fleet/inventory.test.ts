// The inventory through the CLI and REST against real agents: import, show, match,
// hosts mapped to nodes by name, address, FQDN or rankd_node, hosts without an agent,
// persistence across a controller restart, and --group for job placement.
import t from 'tap';
import { startController } from '../helpers/daemons.js';
import { fleetUnderTest } from './helpers.js';

interface InventoryViewLike {
  source: { name: string; format: string } | null;
  groups: Array<{ name: string; hosts: string[]; children: string[]; vars: Record<string, string>; members: string[] }>;
  hosts: Array<{ name: string; node: string | null; agent: string; groups: string[]; vars: Record<string, string> }>;
  unlisted: string[];
}

const INI = `# the lab
[gpu]
n1 gpus=8
n2.lab.example gpus=8
127.0.0.7 rankd_node=n4

[cpu]
127.0.0.9
ghost[1:2]

[compute:children]
gpu
cpu

[compute:vars]
model_dir=/mnt/models
`;

t.test('import an Ansible INI inventory with groups, children and vars; hosts map to nodes', async (t) => {
  const f = await fleetUnderTest(t, ['n1', 'n2', { name: 'n3', extra: ['--address', '127.0.0.9'] }, 'n4', 'outside']);
  const imported = await f.importInventory('lab.ini', INI);
  t.equal(imported.code, 0, imported.stderr);
  t.match(imported.stdout, /imported .*lab\.ini \(ini\): 6 hosts in 3 groups; 2 hosts have no agent yet/);

  const shown = await f.cli(['inventory', '--json']);
  const view = JSON.parse(shown.stdout) as InventoryViewLike;
  t.equal(view.source?.name, 'lab.ini');
  t.equal(view.source?.format, 'ini');
  const compute = view.groups.find((g) => g.name === 'compute')!;
  t.same(compute.children, ['gpu', 'cpu']);
  t.same(compute.vars, { model_dir: '/mnt/models' });
  t.same(compute.members, ['n1', 'n2.lab.example', '127.0.0.7', '127.0.0.9', 'ghost1', 'ghost2']);
  const host = (name: string) => view.hosts.find((h) => h.name === name)!;
  t.same([host('n1').node, host('n1').agent], ['n1', 'ready'], 'by name');
  t.same([host('n2.lab.example').node, host('n2.lab.example').agent], ['n2', 'ready'], 'by the first label of an FQDN');
  t.same([host('127.0.0.9').node, host('127.0.0.9').agent], ['n3', 'ready'], 'by the registered address');
  t.same([host('127.0.0.7').node, host('127.0.0.7').agent], ['n4', 'ready'], 'by rankd_node');
  t.same([host('ghost1').node, host('ghost1').agent], [null, 'none'], 'a host without an agent stays, marked none');
  t.same(host('n1').vars, { model_dir: '/mnt/models', gpus: '8' });
  t.same(host('n1').groups.sort(), ['compute', 'gpu']);
  t.same(view.unlisted, ['outside'], 'registered nodes the inventory does not name');

  const text = await f.cli(['inventory']);
  t.match(text.stdout, /^ghost1\s+-\s+none \(no agent registered\)/m);
  t.match(text.stdout, /nodes outside the inventory: outside/);

  const match = async (pattern: string) => {
    const r = await f.cli(['inventory', 'match', pattern, '--json']);
    t.equal(r.code, 0, `${pattern}: ${r.stderr}`);
    return (JSON.parse(r.stdout) as { hosts: Array<{ host: string; node: string | null; agent: string }> }).hosts.map(
      (h) => h.node ?? `${h.host}?`,
    );
  };
  t.same(await match('gpu'), ['n1', 'n2', 'n4']);
  t.same(await match('compute:!ghost*'), ['n1', 'n2', 'n4', 'n3']);
  t.same(await match('compute:&cpu'), ['n3', 'ghost1?', 'ghost2?']);
  t.same(
    await match('all'),
    ['n1', 'n2', 'n4', 'n3', 'ghost1?', 'ghost2?', 'outside'],
    'all includes nodes outside the inventory',
  );
  t.same(await match('outside'), ['outside'], 'a registered node is reachable by name');
  t.same(await match('gpus=8'), ['n1', 'n2'], 'key=value over inventory vars');

  const unknown = await f.cli(['inventory', 'match', 'gpu:!n9']);
  t.equal(unknown.code, 65);
  t.match(unknown.stderr, /"n9" matches no group, host or node/);

  // --group places jobs on inventory patterns, and refuses to drop hosts silently
  const plan = await f.controller.api<{ nodes: Array<{ name: string }> }>('/v1/plan', {
    method: 'POST',
    body: { placement: { group: 'gpu' } },
  });
  t.equal(plan.status, 200, JSON.stringify(plan.body));
  t.same(
    plan.body.nodes.map((n) => n.name),
    ['n1', 'n2', 'n4'],
  );
  const withGhosts = await f.cli(['run', '-q', '--group', 'compute', '--', 'true']);
  t.equal(withGhosts.code, 65);
  t.match(
    withGhosts.stderr,
    /--group compute selects hosts without a ready agent: ghost1 \(no agent\), ghost2 \(no agent\); leave them out with --group 'compute:!ghost1:!ghost2'/,
  );
  const run = await f.cli(['run', '-q', '--group', 'compute:!ghost1:!ghost2', '--', 'true']);
  t.equal(run.code, 0, run.stderr);
});

t.test('a malformed file is refused with its line and the stored inventory stays', async (t) => {
  const f = await fleetUnderTest(t, ['m1']);
  t.equal((await f.importInventory('good.ini', '[g]\nm1\n')).code, 0);
  const bad = await f.importInventory('bad.ini', '[g]\nm1\n\n[g:vars]\nthis line has no equals sign\n');
  t.equal(bad.code, 65);
  t.match(
    bad.stderr,
    /bad\.ini:5: expected "key=value" in \[g:vars\], got "this line has no equals sign" \(RANKD_INVENTORY_PARSE\)/,
  );
  const view = JSON.parse((await f.cli(['inventory', '--json'])).stdout) as InventoryViewLike;
  t.equal(view.source?.name, 'good.ini', 'the bad import changed nothing');

  const missing = await f.cli(['inventory', 'import', '/nonexistent/hosts.ini']);
  t.equal(missing.code, 70);
  t.match(missing.stderr, /cannot read \/nonexistent\/hosts\.ini/);
  const format = await f.cli(['inventory', 'import', '--format', 'yaml', '/dev/null']);
  t.equal(format.code, 64);
});

t.test('hostfiles join a group, --merge adds to the inventory, and it survives a controller restart', async (t) => {
  const f = await fleetUnderTest(t, ['h1']);
  t.equal((await f.importInventory('hosts.ini', '[login]\nh1\n')).code, 0);
  const hf = await f.importInventory('hostfile', 'h1 slots=2\nworker-9 slots=4 max_slots=8\n', [
    '--group',
    'train',
    '--merge',
  ]);
  t.equal(hf.code, 0, hf.stderr);
  const view = JSON.parse((await f.cli(['inventory', '--json'])).stdout) as InventoryViewLike;
  t.same(view.groups.find((g) => g.name === 'train')?.hosts, ['h1', 'worker-9']);
  t.same(view.groups.find((g) => g.name === 'login')?.hosts, ['h1'], 'merged, not replaced');
  t.same(view.hosts.find((h) => h.name === 'worker-9')?.vars, { slots: '4', max_slots: '8' });
  t.equal(view.source?.name, 'hosts.ini + hostfile');

  await f.controller.stop();
  const again = await startController({ dataDir: f.controller.dataDir });
  t.teardown(() => again.stop());
  const after = await again.api<InventoryViewLike>('/v1/inventory');
  t.same(
    after.body.groups.find((g) => g.name === 'train')?.hosts,
    ['h1', 'worker-9'],
    'the inventory is stored in the controller',
  );
  const cleared = await again.api('/v1/inventory', { method: 'DELETE' });
  t.equal(cleared.status, 204);
  t.equal((await again.api<InventoryViewLike>('/v1/inventory')).body.source, null);
});

// Fleet operations across real network stacks: three hosts in their own network
// namespaces (test/cluster/harness). exec runs in each host's stack, the doctor's agents
// probe each other over the host addresses, and a host whose cable is pulled is named
// unreachable by ping.
import t from 'tap';
import { startCluster } from '../cluster/harness/cluster.js';
import { clusterTest } from '../cluster/harness/requirements.js';

interface MatrixLike {
  nodes: string[];
  addresses: Array<string | null>;
  cells: Array<Array<{ ok: boolean; rttMs: number | null; error: string | null } | null>>;
}

clusterTest(t, 'exec, the connection matrix and ping across network namespaces', { timeout: 300_000 }, async (t) => {
  const c = await startCluster(t, { hosts: 3 });
  const hosts = c.net.hosts;

  const exec = await c.rankd(['exec', 'all', '--json', '--', 'ip', '-4', '-o', 'addr', 'show', 'dev', 'eth0']);
  t.equal(exec.code, 0, exec.stderr);
  const report = JSON.parse(exec.stdout) as { hosts: Array<{ host: string; stdout: string }> };
  for (const h of hosts) {
    const r = report.hosts.find((x) => x.host === h.name);
    t.match(
      r?.stdout,
      new RegExp(`inet ${h.address.replace(/\./g, '\\.')}/`),
      `${h.name} ran the command in its own network stack`,
    );
  }

  const doctor = await c.rankd(['doctor', '--matrix', '--json']);
  const matrix = (JSON.parse(doctor.stdout) as { matrix: MatrixLike }).matrix;
  t.same(
    matrix.nodes,
    hosts.map((h) => h.name),
  );
  t.same(
    matrix.addresses,
    hosts.map((h) => h.address),
    'each agent listens on its host address',
  );
  for (let i = 0; i < hosts.length; i++) {
    for (let j = 0; j < hosts.length; j++) {
      if (i !== j)
        t.ok(
          matrix.cells[i]![j]?.ok,
          `${hosts[i]!.name} reaches ${hosts[j]!.name}: ${JSON.stringify(matrix.cells[i]![j])}`,
        );
    }
  }

  const shell = await c.rankd(['shell', 'host2', '--', 'sh', '-c', 'ip -4 -o addr show dev eth0; exit 4']);
  t.equal(shell.code, 4);
  t.match(shell.stdout, new RegExp(`inet ${hosts[1]!.address.replace(/\./g, '\\.')}/`), 'the shell runs on host2');

  c.cut('host3');
  const ping = await c.rankd(['ping', '--timeout', '3', '--json']);
  t.equal(ping.code, 4);
  const pings = (JSON.parse(ping.stdout) as { hosts: Array<{ host: string; status: string }> }).hosts;
  t.same(
    pings.map((p) => [p.host, p.status]),
    [
      ['host1', 'SUCCESS'],
      ['host2', 'SUCCESS'],
      ['host3', 'UNREACHABLE'],
    ],
  );
  c.restore('host3');
});

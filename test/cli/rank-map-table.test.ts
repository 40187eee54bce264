// `rankd run` renders its rank-map header with the shared schema-free renderer, from the map as
// JSON; it must stay the planner's table view, byte for byte, on every kind of map.
import t from 'tap';
import type { RankMap } from '@rankd/protocol';
import { renderRankMapTable } from '@rankd/protocol/rank-map-table';
import { planRankMap } from '@rankd/planner';
import { renderRankMap } from '@rankd/planner/views';
import {
  cgroupRestricted,
  epycNps4Gpu8,
  seed000Spr,
  seed001CloudVm,
  seed002NoHt,
  seed004RocePod,
} from '../helpers/machines.js';
import { uniform } from '../planner/cluster.js';

const dir = t.testdir();
const spr = uniform(`${dir}/spr`, seed000Spr, 2, 'node', '10.1.0');
const pod = uniform(`${dir}/pod`, seed004RocePod, 2, 'pod-', '10.5.0');
const maps: Record<string, RankMap> = {
  // comm workers, two NICs per rank with IPv4 GIDs
  'SPR, 2 nodes, comm workers': planRankMap(spr, { ranksPerNode: 2, cpusPerRank: 48, commWorkers: 4 }),
  'SPR, every thread, cyclic': planRankMap(spr, { ranksPerNode: 4, ht: 'all', distribution: 'cyclic' }),
  // GPUs, InfiniBand GIDs (no IPv4 inside), NPS4 memory nodes
  'EPYC with 8 GPUs': planRankMap(uniform(`${dir}/dgx`, epycNps4Gpu8, 1, 'dgx', '10.4.0'), {
    ranksPerNode: 'gpu',
    gpusPerRank: 1,
  }),
  // GID at index 9 behind IPv6 entries
  'RoCE pod': planRankMap(pod, {}),
  'RoCE pod, IPv6 GID': planRankMap(pod, { env: { NCCL_IB_ADDR_FAMILY: 'AF_INET6' } }),
  'cloud VM, no NIC': planRankMap(uniform(`${dir}/vm`, seed001CloudVm, 1, 'vm', '10.2.0'), { ntasks: 2, nic: 'none' }),
  'no hyper-threads': planRankMap(uniform(`${dir}/noht`, seed002NoHt, 3, 'c', '10.3.0'), { ranksPerNode: 'numa' }),
  // no address (a dash in the node table) and notes at the end
  'cgroup-restricted, notes': planRankMap(uniform(`${dir}/cg`, cgroupRestricted, 1, 'shared', null), {
    ranksPerNode: 2,
  }),
};

for (const [name, map] of Object.entries(maps)) {
  t.test(name, async (t) => {
    // what the controller sends: the map as JSON, not the planner's objects
    const sent = JSON.parse(JSON.stringify(map)) as RankMap;
    t.equal(renderRankMapTable(sent), renderRankMap(map, 'table'));
  });
}

t.test('the maps above cover what the table shows', async (t) => {
  const all = Object.values(maps);
  const ranks = all.flatMap((m) => m.ranks);
  t.ok(
    all.some((m) => m.notes.length > 0),
    'notes',
  );
  t.ok(
    all.some((m) => m.nodes.some((n) => n.address === null)),
    'a node without an address',
  );
  t.ok(
    ranks.some((r) => r.commCpus.length > 0),
    'comm CPUs',
  );
  t.ok(
    ranks.some((r) => r.gpus.length > 0),
    'GPUs',
  );
  t.ok(
    ranks.some((r) => r.nics.length > 1),
    'several NICs on a rank',
  );
  t.ok(
    ranks.some((r) => r.nics.length === 0),
    'no NIC',
  );
  t.ok(
    ranks.some((r) => r.nics.some((n) => n.gidIndex === null)),
    'a NIC without a GID index (InfiniBand)',
  );
  t.ok(
    ranks.some((r) => r.nics.some((n) => n.gidIndex !== null && !/ffff/i.test(n.gid ?? ''))),
    'a GID without an IPv4 address',
  );
});

// The RoCE GID choice follows NCCL's walk over the GID table.
import t from 'tap';
import type { Gid } from '@rankd/protocol';
import { chooseGid, gidPreferenceFromEnv } from '#planner/gid';
import { ipv4Gid } from '../helpers/machines.js';

const LL = 'fe80:0000:0000:0000:0200:00ff:fe01:0100';
const V6 = 'fd00:0000:0000:0000:0000:0000:0000:0101';
const V4 = ipv4Gid('172.16.0.1');

function gid(index: number, text: string, type: Gid['type']): Gid {
  const v4 = text.startsWith('0000:0000:0000:0000:0000:ffff:');
  return {
    index,
    gid: text,
    type,
    netdev: 'net1',
    scope: v4 ? 'ipv4-mapped' : text.startsWith('fe80') ? 'link-local' : 'global',
    ipv4: null,
  };
}

// the pod of seed 004: IPv6 before IPv4, empty slots in between
const pod: Gid[] = [
  gid(0, LL, 'IB/RoCE v1'),
  gid(1, LL, 'RoCE v2'),
  gid(3, V6, 'IB/RoCE v1'),
  gid(4, V6, 'RoCE v2'),
  gid(8, V4, 'IB/RoCE v1'),
  gid(9, V4, 'RoCE v2'),
];

t.test('IPv4 RoCE v2 by default, wherever it sits in the table', async (t) => {
  t.same(chooseGid(pod), { index: 9, gid: V4, ideal: true });
  const usual = [gid(0, LL, 'IB/RoCE v1'), gid(1, LL, 'RoCE v2'), gid(2, V4, 'IB/RoCE v1'), gid(3, V4, 'RoCE v2')];
  t.equal(chooseGid(usual).index, 3);
  // the order of the facts' list does not matter, only the indexes
  t.equal(chooseGid([...pod].reverse()).index, 9);
});

t.test('NCCL_IB_ADDR_FAMILY and NCCL_IB_ROCE_VERSION_NUM change the walk as they change NCCL', async (t) => {
  t.equal(chooseGid(pod, gidPreferenceFromEnv({ NCCL_IB_ADDR_FAMILY: 'AF_INET6' })).index, 4);
  t.equal(chooseGid(pod, gidPreferenceFromEnv({ NCCL_IB_ROCE_VERSION_NUM: '1' })).index, 8);
  t.equal(chooseGid(pod, gidPreferenceFromEnv({ NCCL_IB_GID_INDEX: '1' })).index, 1);
  t.equal(
    chooseGid(pod, gidPreferenceFromEnv({ NCCL_IB_GID_INDEX: '1' })).ideal,
    false,
    'a link-local entry is never ideal',
  );
});

t.test('link-local entries are skipped; a table without IPv4 stays on index 0, not ideal', async (t) => {
  const v6only = [gid(0, LL, 'IB/RoCE v1'), gid(1, LL, 'RoCE v2'), gid(2, V6, 'RoCE v2')];
  t.same(chooseGid(v6only), { index: 0, gid: LL, ideal: false });
});

t.test('an empty index 0 is where the walk starts; nothing better leaves no GID', async (t) => {
  t.same(chooseGid([gid(2, V4, 'RoCE v2')]), { index: 2, gid: V4, ideal: true });
  t.same(chooseGid([]), { index: null, gid: null, ideal: false });
});

t.test('RoCE v1 only: the IPv4 v1 entry is taken, flagged as not ideal', async (t) => {
  const v1 = [gid(0, LL, 'IB/RoCE v1'), gid(1, V4, 'IB/RoCE v1')];
  t.same(chooseGid(v1), { index: 1, gid: V4, ideal: false });
});

t.test('malformed or upper-case entries are read as NCCL would read the raw bytes', async (t) => {
  t.equal(chooseGid([gid(0, 'not-a-gid', 'RoCE v2'), gid(1, V4, 'RoCE v2')]).index, 1);
  // upper-case hex still parses: a link-local entry stays invalid, an IPv6 one valid
  const upper = [gid(0, LL.toUpperCase(), 'RoCE v2'), gid(1, V6.toUpperCase(), 'RoCE v2')];
  t.same(chooseGid(upper, gidPreferenceFromEnv({ NCCL_IB_ADDR_FAMILY: 'AF_INET6' })), {
    index: 1,
    gid: V6.toUpperCase(),
    ideal: true,
  });
});

import t from 'tap';
import { formatCpuList, formatCpuMask, parseCpuList, parseCpuMask } from '@rankd/protocol';

t.test('cpulist parsing', async (t) => {
  t.same(parseCpuList('0-3,8,10-11\n'), [0, 1, 2, 3, 8, 10, 11]);
  t.same(parseCpuList('5\0\0'), [5], 'NUL bytes at the end');
  t.same(parseCpuList(''), []);
  t.same(parseCpuList('0-7:2/4'), [0, 1, 4, 5], 'stride form');
  t.same(parseCpuList('3,1,1,2'), [1, 2, 3], 'sorted and de-duplicated');
  t.throws(() => parseCpuList('0-'), /bad cpulist/);
  t.throws(() => parseCpuList('3-1'), /bad cpulist/);
  t.throws(() => parseCpuList('a'), /bad cpulist/);
});

t.test('cpumask parsing', async (t) => {
  t.same(parseCpuMask('0000000f'), [0, 1, 2, 3]);
  t.same(parseCpuMask('00000001,00000000'), [32]);
  t.same(parseCpuMask('80000000,00000001\0'), [0, 63]);
  t.throws(() => parseCpuMask('xyz'), /bad cpumask/);
});

t.test('formatting', async (t) => {
  t.equal(formatCpuList([0, 1, 2, 3, 8, 10, 11]), '0-3,8,10-11');
  t.equal(formatCpuList([5, 1, 3, 2]), '1-3,5');
  t.equal(formatCpuList([]), '');
  t.equal(formatCpuMask([0, 1, 4]), '0x13');
  t.equal(
    formatCpuMask([4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27]),
    '0xffffff0',
  );
  const big = Array.from({ length: 224 }, (_, i) => i);
  t.same(parseCpuList(formatCpuList(big)), big, 'round trip');
});

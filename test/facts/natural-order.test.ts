// The facts' natural order of names (eth2 < eth10) without ICU's collator for plain names:
// it must answer as the collator does, for every pair, and leave other names to it.
import t from 'tap';
import { naturalCompare, simpleOrder } from '@rankd/protocol/natural-order';

const collator = new Intl.Collator('en', { numeric: true });
const sign = (n: number) => Math.sign(n) as -1 | 0 | 1;

/** A fixed pseudo-random sequence (mulberry32), so that a failure can be replayed. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let x = Math.imul(s ^ (s >>> 15), 1 | s);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** Names like eth0, mlx5_10, enp3s0f1.100, veth-a0; now and then a character outside [a-z0-9_.-] or a leading zero. */
function nameFrom(next: () => number): string {
  const parts = [
    'eth',
    'en',
    'p',
    's',
    'f',
    'mlx',
    'ib',
    'bond',
    'veth',
    'a',
    'b',
    'z',
    '_',
    '-',
    '.',
    '0',
    '1',
    '2',
    '9',
    '10',
    '11',
    '100',
    '007',
    'A',
    'É',
    ':',
    '@',
    '',
  ];
  let name = '';
  const n = 1 + Math.floor(next() * 5);
  for (let k = 0; k < n; k++) name += parts[Math.floor(next() * parts.length)];
  return name;
}

t.test('every pair of generated names: the same answer as the collator', (t) => {
  const next = random(16);
  let simple = 0;
  let mismatches = 0;
  for (let k = 0; k < 20_000; k++) {
    const a = nameFrom(next);
    const b = nameFrom(next);
    const expected = sign(collator.compare(a, b));
    if (sign(naturalCompare(a, b)) !== expected) {
      mismatches++;
      if (mismatches < 5)
        t.fail(`${JSON.stringify(a)} vs ${JSON.stringify(b)}: ${naturalCompare(a, b)}, the collator says ${expected}`);
    }
    const fast = simpleOrder(a, b);
    if (fast !== undefined) simple++;
  }
  t.equal(mismatches, 0, 'no pair ordered differently');
  t.ok(simple > 5_000, `the plain pairs (about 40% of them) were ordered without the collator (${simple} of 20,000)`);
  t.end();
});

t.test('names a machine has: sorted as the collator sorts them, and without it', (t) => {
  const names = [
    'lo',
    'eth10',
    'eth2',
    'eth1',
    'enp3s0f1',
    'enp3s0f0',
    'enp3s0f0.100',
    'bond0',
    'mlx5_10',
    'mlx5_2',
    'mlx5_0',
    'veth-a0',
    'veth_a0',
    'ib0',
    'docker0',
  ];
  t.same([...names].sort(naturalCompare), [...names].sort(collator.compare));
  for (const a of names) for (const b of names) t.not(simpleOrder(a, b), undefined, `${a} vs ${b} needs no collator`);
  t.end();
});

t.test('names it does not order itself are left to the collator', (t) => {
  t.equal(simpleOrder('eth01', 'eth1'), undefined, 'names that differ only in the zeros that pad a number');
  t.equal(simpleOrder('Eth0', 'eth1'), undefined, 'a capital');
  t.equal(simpleOrder('eth0', 'eth0:1'), undefined, 'a colon');
  t.equal(sign(naturalCompare('Eth0', 'eth0')), sign(collator.compare('Eth0', 'eth0')));
  t.end();
});

t.test('padded node names, as clusters number them: ordered as the collator does, and without it', (t) => {
  const names = Array.from({ length: 120 }, (_, i) => `node${String(i * 17 + 1).padStart(4, '0')}`).concat([
    'node0001-ib',
    'node1',
    'gpu007',
    'gpu07a',
    'gpu0010',
  ]);
  const shuffled = [...names].sort(
    (a, b) => ((a.length * 31 + a.charCodeAt(a.length - 1)) % 7) - ((b.length * 31 + b.charCodeAt(b.length - 1)) % 7),
  );
  const byCollator = [...shuffled].sort(collator.compare);
  t.same([...shuffled].sort(naturalCompare), byCollator);
  let decided = 0;
  for (const a of names) for (const b of names) if (simpleOrder(a, b) !== undefined) decided++;
  // only node1 against node0001 (and a name against itself, which is 0) differ in padding alone
  t.equal(decided, names.length * names.length - 2, 'every pair but node1/node0001 is ordered without the collator');
  t.end();
});

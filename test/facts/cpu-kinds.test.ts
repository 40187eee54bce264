// CPU kinds: the runs of /proc/cpuinfo that lscpu calls CPU types, in each layout the
// kernel writes.
import t from 'tap';
import { parseCpuKinds } from '#topology/cpu-kinds';

const runs = (text: string) => parseCpuKinds(text).map((k) => [k.model ?? k.modelName, k.cpus]);

t.test('x86: one entry per CPU, the model lines after "processor"', (t) => {
  const entry = (cpu: number, stepping: number) =>
    `processor\t: ${cpu}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R)\nstepping\t: ${stepping}\nflags\t\t: fpu vme\n\n`;
  const kinds = parseCpuKinds(entry(0, 8) + entry(1, 8) + entry(2, 6) + entry(3, 6));
  t.same(
    kinds.map((k) => [k.vendor, k.model, k.modelName, k.stepping, k.cpus]),
    [
      ['GenuineIntel', '143', 'Intel(R) Xeon(R)', '8', [0, 1]],
      ['GenuineIntel', '143', 'Intel(R) Xeon(R)', '6', [2, 3]],
    ],
    'a stepping change starts a run',
  );
  t.end();
});

t.test('ARM big.LITTLE: runs, not models: a part that comes back opens a new run', (t) => {
  const entry = (cpu: number, part: string) =>
    `processor\t: ${cpu}\nCPU implementer\t: 0x41\nCPU variant\t: 0x0\nCPU part\t: ${part}\nCPU revision\t: 1\n\n`;
  t.same(runs(entry(0, '0xd87') + entry(1, '0xd85') + entry(2, '0xd85') + entry(3, '0xd87')), [
    ['0xd87', [0]],
    ['0xd85', [1, 2]],
    ['0xd87', [3]],
  ]);
  t.end();
});

t.test('old ARM: every processor first, the model once at the end', (t) => {
  const text =
    'Processor\t: ARMv7 Processor rev 1 (v7l)\nprocessor\t: 0\nBogoMIPS\t: 1595.80\n\nprocessor\t: 1\nBogoMIPS\t: 1595.80\n\nFeatures\t: swp half\nCPU implementer\t: 0x41\nCPU part\t: 0xc09\n';
  // BogoMIPS opens the run under processor 0 already; processor 1 ends up in the same one
  t.same(runs(text), [['0xc09', [0, 1]]]);
  t.end();
});

t.test('s390: the model lines come first, processors are numbered in the key', (t) => {
  const text =
    'vendor_id       : IBM/S390\n# processors    : 2\nbogomips per cpu: 14367.00\nfeatures\t: esan3 zarch\n' +
    'processor 0: version = 00,  identification = 279F25,  machine = 2817\nprocessor 1: version = 00,  identification = 279F25,  machine = 2817\n';
  t.same(
    parseCpuKinds(text).map((k) => [k.vendor, k.cpus]),
    [['IBM/S390', [0, 1]]],
  );
  t.end();
});

t.test('IA-64: "cpu number" switches processors too (always to 0 there)', (t) => {
  const entry = (cpu: number, model: number) =>
    `processor  : ${cpu}\nvendor     : GenuineIntel\nmodel      : ${model}\ncpu number : 0\n\n`;
  // "cpu number : 0" hands each entry's run to the entry's own processor, then makes 0
  // current; at the end 0 keeps the run it already has
  t.same(runs(entry(0, 1) + entry(1, 1) + entry(2, 2)), [
    ['1', [0, 1]],
    ['2', [2]],
  ]);
  t.end();
});

t.test('no model lines at all: no kinds', (t) => {
  t.same(parseCpuKinds('processor\t: 0\n\nprocessor\t: 1\n'), []);
  t.same(parseCpuKinds(''), []);
  t.end();
});

t.test('lines lscpu ignores: empty values, unknown keys, keys over 31 characters', (t) => {
  const text =
    'processor\t: 0\nmodel name\t:\nmodel name\t: A\nmicrocode\t: 0x1\n' +
    'x'.repeat(40) +
    '\t: B\nprocessor\t: 1\nmodel name\t: A\n';
  t.same(runs(text), [['A', [0, 1]]]);
  t.end();
});

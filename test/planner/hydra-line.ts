// Reading back what `--format impi` prints: the shell splits the command into words (so
// its quoting is tested too), then the words are read as hydra reads them, and masks are
// decoded with BigInt, independently of the view's own formatting.
import { execFileSync } from 'node:child_process';
import type { RankEntry, RankMap } from '@rankd/protocol';
import { IMPI_COMMAND_PLACEHOLDER } from '#planner/views/impi';

/** One argument set: its -n and -env. */
export interface ArgSet {
  n: number | null;
  env: Record<string, string>;
}

export interface HydraLine {
  /** -machinefile, -np, -ppn … as given (flags without a value map to ''). */
  options: Record<string, string>;
  genv: Record<string, string>;
  sets: ArgSet[];
  /** The `#` lines. */
  comments: string[];
}

const PROGRAM = 'PROGRAM';

/** The words the shell hands mpiexec.hydra, with the placeholder standing as PROGRAM. */
export function hydraWords(text: string): string[] {
  // dash takes no "." in a function name: the command's first word becomes the printer
  const script = text.replace(/^mpiexec\.hydra /m, "printf '%s\\0' ").replaceAll(IMPI_COMMAND_PLACEHOLDER, PROGRAM);
  const out = execFileSync('/bin/sh', ['-c', script], { encoding: 'utf8', env: {} });
  return out.split('\0').slice(0, -1);
}

export function readHydraLine(text: string): HydraLine {
  const words = hydraWords(text);
  const line: HydraLine = {
    options: {},
    genv: {},
    sets: [{ n: null, env: {} }],
    comments: text.split('\n').filter((l) => l.startsWith('#')),
  };
  const pair = (word: string | undefined): [string, string] => {
    const eq = word?.indexOf('=') ?? -1;
    if (eq <= 0) throw new Error(`expected K=V, got ${word}`);
    return [word!.slice(0, eq), word!.slice(eq + 1)];
  };
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const set = line.sets.at(-1)!;
    if (w === '-genv') {
      const [k, v] = pair(words[++i]);
      line.genv[k] = v;
    } else if (w === '-env') {
      const [k, v] = pair(words[++i]);
      set.env[k] = v;
    } else if (w === '-n') {
      set.n = Number(words[++i]);
    } else if (w === '-l') {
      line.options[w] = '';
    } else if (w.startsWith('-')) {
      line.options[w] = words[++i]!;
    } else if (w === PROGRAM) {
      if (words[i + 1] === ':') {
        line.sets.push({ n: null, env: {} });
        i++;
      } else if (i !== words.length - 1) {
        throw new Error(`words after the program: ${words.slice(i + 1).join(' ')}`);
      }
    } else {
      throw new Error(`unexpected word ${w}`);
    }
  }
  if (line.sets.length === 1) line.sets[0]!.n = Number(line.options['-np']);
  return line;
}

/** The CPUs of a hex mask ("0x0000000FFFFFF0" → 4…27). */
export function maskCpus(hex: string): number[] {
  const out: number[] = [];
  let bits = BigInt(hex);
  for (let cpu = 0; bits > 0n; cpu++, bits >>= 1n) if (bits & 1n) out.push(cpu);
  return out;
}

/** I_MPI_PIN_DOMAIN's `[m1,m2,…]` as CPU sets. */
export function pinDomainCpus(value: string): number[][] {
  const m = /^\[(0x[0-9A-Fa-f]+(?:,0x[0-9A-Fa-f]+)*)\]$/.exec(value);
  if (!m) throw new Error(`not a mask list: ${value}`);
  return m[1]!.split(',').map(maskCpus);
}

/** A rank's whole domain: compute and comm-worker CPUs. */
export function domainOf(r: RankEntry): number[] {
  return [...r.cpus, ...r.commCpus].sort((a, b) => a - b);
}

/** The ranks of each node in local-rank order. */
export function ranksByNode(map: RankMap): RankEntry[][] {
  const byRank = new Map(map.ranks.map((r) => [r.rank, r]));
  return map.nodes.map((n) => n.ranks.map((r) => byRank.get(r)!));
}

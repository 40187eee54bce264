// Where one `rankd …` process spends its time, from a V8 CPU profile of it (`node
// --cpu-prof`): its own CPU by kind (Node's start-up and module loading, TLS, HTTP, the
// CLI's code) and how long it sat idle, waiting for the controller, the agent and the
// ranks. The launch figure prints it as what bounds rankd's side.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { timeProcess } from '../lib/process-timing.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface CliProfile {
  /** From the profiler's start (after Node's own bootstrap) to the process's end. */
  profiledMs: number;
  /** Waiting on the event loop: the controller, the agent, the ranks. */
  idleMs: number;
  /** Busy time by kind, largest first. */
  busy: { kind: string; ms: number }[];
}

/**
 * Kinds, by the script a sample was in (V8's native functions by name); the first match
 * wins. Native file reads count as module loading: the CLI itself reads two small files.
 */
const KINDS: ReadonlyArray<[string, RegExp]> = [
  // adding a `ca` to a TLS context makes Node 20 build its store of ~140 bundled root
  // certificates first; the CLI verifies against RANKD_CA itself and adds none, so ~0 here
  ['TLS trust store', /^node:internal\/tls\/secure-context/],
  ['TLS', /^node:(_tls|tls|internal\/tls|crypto|internal\/crypto)/],
  [
    'HTTP and sockets',
    /^node:(_http|http|https|net|internal\/http|internal\/net|internal\/stream_base_commons|dns|internal\/dns)/,
  ],
  [
    'module loading',
    /^node:internal\/(modules|deps\/cjs-module-lexer|fs\/promises|url)|^(ModuleWrap|compileFunction|compileFunctionForCJSLoader|internalModuleStat|internalModuleReadJSON|openFileHandle|readFileUtf8|fstat|read|close|parse|realpath|lstat|stat)$/,
  ],
  ['Node start-up', /^node:internal\/(bootstrap|main|process|per_context|options)/],
  ["the CLI's own code", /^file:.*\/(packages\/|node_modules\/commander\/)/],
  [
    'streams, events, buffers',
    /^node:(events|stream|buffer|internal\/(streams|event_target|async_hooks|fixed_queue|abort_controller|buffer))|^(writeLatin1String|writeUtf8String|writeBuffer|writev)$/,
  ],
  ["V8 and Node's C++, unattributed", /^\(program\)$/],
  ['garbage collection', /^\(garbage collector\)$/],
];

/** Runs argv (node, script, args…) `runs` times under the CPU profiler; the run of median length. */
export async function profileCli(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  dir: string,
  runs = 5,
): Promise<CliProfile> {
  const [node, ...rest] = argv;
  const profiles: CliProfile[] = [];
  for (let i = 0; i < runs; i++) {
    const runDir = path.join(dir, `run-${i}`);
    mkdirSync(runDir, { recursive: true });
    await timeProcess([node!, '--cpu-prof', '--cpu-prof-dir', runDir, '--cpu-prof-interval', '200', ...rest], {
      timeoutMs: 60_000,
      env,
    });
    const file = readdirSync(runDir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no CPU profile was written in ${runDir}`);
    profiles.push(summarizeProfile(JSON.parse(readFileSync(path.join(runDir, file), 'utf8')) as CpuProfile));
  }
  return profiles.sort((a, b) => a.profiledMs - b.profiledMs)[Math.floor(runs / 2)]!;
}

function summarizeProfile(profile: CpuProfile): CliProfile {
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const byKind = new Map<string, number>();
  let idleMs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const frame = frames.get(profile.samples[i]!);
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    // V8's own buckets have no script: their name is the kind, e.g. "(idle)", "(program)"
    const script = frame?.url || frame?.functionName || '';
    if (script === '(idle)') {
      idleMs += ms;
      continue;
    }
    const kind = KINDS.find(([, re]) => re.test(script))?.[0] ?? 'other';
    byKind.set(kind, (byKind.get(kind) ?? 0) + ms);
  }
  const busy = [...byKind].map(([kind, ms]) => ({ kind, ms })).sort((a, b) => b.ms - a.ms);
  return { profiledMs: (profile.endTime - profile.startTime) / 1000, idleMs, busy };
}

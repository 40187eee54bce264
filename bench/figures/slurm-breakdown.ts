// Where `rankd up --slurm`'s time goes, from one more, unmeasured instance started with
// --keep: the timestamps its own logs and Slurm's carry, all from this machine's one clock.
//
//   command spawned → Slurm launches rankd's steps (slurmd's "launch task" lines)
//   → the controller's first log line (its Node start and module loading, beside the 3 agents')
//   → the controller listens (store, CA from the join secret, TLS, HTTP)
//   → the last agent enrolled → the last agent registered → the command's exit.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export interface UpTimeline {
  /** Epoch ms. */
  spawned: number;
  exited: number;
}

interface Mark {
  what: string;
  at: number | null;
}

/** One line for the notes: each mark in seconds after the spawn, and the step between marks. */
export function upBreakdown(home: string, slurmLogs: string, jobId: string, t: UpTimeline): string {
  const controller = pinoLines(path.join(home, 'controller.log'));
  const agents = pinoLines(path.join(home, 'agents.log'));
  const latest = (lines: PinoLine[], msg: string) => {
    const times = lines.filter((l) => l.msg.startsWith(msg)).map((l) => l.time);
    return times.length > 0 ? Math.max(...times) : null;
  };
  const marks: Mark[] = [
    { what: "Slurm launched rankd's steps (last slurmd `launch task`)", at: stepLaunches(slurmLogs, jobId) },
    { what: "the controller's first log line", at: controller[0]?.time ?? null },
    { what: 'the controller listening', at: latest(controller, 'controller listening') },
    { what: 'the last agent enrolled', at: latest(agents, 'enrolled') },
    { what: 'the last agent registered', at: latest(agents, 'registered with controller') },
    { what: '`rankd up` exited', at: t.exited },
  ];
  let before = t.spawned;
  const parts = marks.map((m) => {
    if (m.at === null) return `${m.what}: not in the logs`;
    const text = `${m.what} at ${s(m.at - t.spawned)} (+${s(m.at - before)})`;
    before = m.at;
    return text;
  });
  return `From the command's spawn: ${parts.join('; ')}.`;
}

/**
 * One `rankd run` against the kept instance: its wall time against the controller's part,
 * from the job's POST to "job ended" in the controller's log (planning, the agents' launch
 * of the ranks, their exit reports).
 */
export function runBreakdown(home: string, t: UpTimeline): string {
  const controller = pinoLines(path.join(home, 'controller.log')).filter((l) => l.time >= t.spawned);
  const posted = controller.find((l) => l.msg === 'incoming request' && l.url === '/v1/jobs' && l.method === 'POST');
  const ended = controller.find((l) => l.msg === 'job ended');
  if (!posted || !ended) return 'the controller logged no POST /v1/jobs and "job ended" for it';
  return (
    `\`rankd run\` took ${s(t.exited - t.spawned)} from spawn to exit: its POST /v1/jobs reached the controller ` +
    `at ${s(posted.time - t.spawned)} (the CLI's Node start, its config, the TLS connection), the job ended ` +
    `${s(ended.time - posted.time)} later (plan, launch on 3 agents, exit reports), and the CLI exited ` +
    `${s(t.exited - ended.time)} after that (the end of its log stream, the rank map's and summary's output).`
  );
}

function s(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

interface PinoLine {
  time: number;
  msg: string;
  method?: string;
  url?: string;
}

function pinoLines(file: string): PinoLine[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const out: PinoLine[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const j = JSON.parse(line) as { time?: unknown; msg?: unknown; req?: { method?: string; url?: string } };
      if (typeof j.time !== 'number') continue;
      const msg = typeof j.msg === 'string' ? j.msg : '';
      out.push({ time: j.time, msg, ...(j.req ? { method: j.req.method, url: j.req.url } : {}) });
    } catch {
      // a line that is not the logger's (srun's own messages share the file)
    }
  }
  return out.sort((a, b) => a.time - b.time);
}

/**
 * The last "launch task StepId=JOB.N" of the job's newest two steps, across the slurmd logs:
 * slurmd stamps its lines in local time to the millisecond ("[2026-11-26T09:35:45.366]").
 */
function stepLaunches(dir: string, jobId: string): number | null {
  const launches: Array<{ step: number; at: number }> = [];
  for (const f of readdirSync(dir).filter((n) => /^slurmd-.*\.log$/.test(n))) {
    for (const line of readFileSync(path.join(dir, f), 'utf8').split('\n')) {
      const m = /^\[([\d-]+T[\d:.]+)\] launch task StepId=(\d+)\.(\d+) /.exec(line);
      if (m && m[2] === jobId) launches.push({ step: Number(m[3]), at: new Date(m[1]!).getTime() });
    }
  }
  if (launches.length === 0) return null;
  const newest = Math.max(...launches.map((l) => l.step));
  return Math.max(...launches.filter((l) => l.step >= newest - 1).map((l) => l.at));
}

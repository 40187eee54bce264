// What the doctor needs from a node beyond its facts: the clock (for skew), whether
// numactl is installed (for `numactl -H` to compare facts with), the rank supervisor that
// starts the ranks (its path and version, or why it cannot), the probe programs of
// `rankd check net` (found the way the probes find them), and the state of required
// paths — stat'ed by the agent itself, so that a stale NFS mount shows as the error it is —
// and how the agent runs (ephemeral or the root service, as which user).
import fs from 'node:fs';
import os from 'node:os';
import type { AgentMode, DoctorInspect, PathState, ProbeTools, RankLauncher } from '@rankd/protocol';
import type { SupervisorBinary } from '../ranks/supervisor-binary.js';
import { findTool } from '../ranks/program.js';

/** A hung NFS server can block stat for minutes; the doctor reports it instead of waiting. */
const STAT_TIMEOUT_MS = 3000;

export async function inspectNode(
  m: DoctorInspect,
  launcher?: SupervisorBinary,
  ephemeral = false,
): Promise<{
  agentTime: number;
  numactl: string | null;
  paths: PathState[];
  launcher?: RankLauncher;
  probeTools: ProbeTools;
  agent: AgentMode;
}> {
  const paths = await Promise.all(m.paths.map((p) => statPath(p)));
  return {
    agentTime: Date.now(),
    numactl: findTool('numactl'),
    paths,
    ...(launcher ? { launcher: launcherReport(launcher) } : {}),
    probeTools: {
      iperf3: findTool('iperf3'),
      ib_write_bw: findTool('ib_write_bw'),
      ib_write_lat: findTool('ib_write_lat'),
    },
    agent: agentMode(ephemeral),
  };
}

function agentMode(ephemeral: boolean): AgentMode {
  const uid = process.getuid?.() ?? 0;
  let user: string;
  try {
    user = os.userInfo().username || `uid ${uid}`;
  } catch {
    // a uid without a passwd entry (a pod's runAsUser) has no name: the number stands for it
    user = `uid ${uid}`;
  }
  return { ephemeral, user: user.slice(0, 256), uid };
}

export function launcherReport(s: SupervisorBinary): RankLauncher {
  return { path: s.path, version: s.version, problem: s.problem };
}

function statPath(path: string): Promise<PathState> {
  return new Promise((resolve) => {
    const timer = setTimeout(
      () =>
        resolve({
          path,
          exists: false,
          kind: null,
          error: `stat did not return within ${STAT_TIMEOUT_MS} ms (a hung mount?)`,
        }),
      STAT_TIMEOUT_MS,
    );
    fs.promises.stat(path).then(
      (st) => {
        clearTimeout(timer);
        resolve({
          path,
          exists: true,
          kind: st.isDirectory() ? 'directory' : st.isFile() ? 'file' : 'other',
          error: null,
        });
      },
      (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        resolve({ path, exists: false, kind: null, error: err.code ?? err.message });
      },
    );
  });
}

// Every rank of a job: where the plan put it, where the agent found it bound, its NIC, GID
// and GPUs, its state and exit, and its environment on demand.
import type { JobView } from '../api/client';
import { rankColour } from '../topology/overlay';
import { StateBadge, count } from '../format';

/** "0-3,8" for [0,1,2,3,8]: how CPU lists read in taskset, numactl and Slurm. */
export function cpuList(cpus: readonly number[]): string {
  const sorted = [...cpus].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    out.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return out.join(',');
}

export function RankTable({ job }: { job: JobView }) {
  const map = job.rankMap!;
  return (
    <table class="grid ranks" aria-label="Ranks">
      <thead>
        <tr>
          <th scope="col">Rank</th>
          <th scope="col">Node</th>
          <th scope="col">Local</th>
          <th scope="col">Planned CPUs</th>
          <th scope="col">Actual CPUs</th>
          <th scope="col">Comm CPUs</th>
          <th scope="col">Memory</th>
          <th scope="col">NIC · GID</th>
          <th scope="col">GPUs</th>
          <th scope="col">State</th>
          <th scope="col">Exit</th>
          <th scope="col">Environment</th>
        </tr>
      </thead>
      <tbody>
        {map.ranks.map((entry) => {
          const r = job.ranks[entry.rank];
          const actual = r?.actual;
          const verified = actual?.verified;
          return (
            <tr key={entry.rank} data-rank={entry.rank}>
              <td>
                <span class="rank-tag" style={{ background: rankColour(entry.rank) }}>
                  r{entry.rank}
                </span>
              </td>
              <td>{entry.node}</td>
              <td>{entry.localRank}</td>
              <td class="mono">{cpuList(entry.cpus)}</td>
              <td
                class={`mono ${actual ? (verified ? 'ok' : 'bad') : ''}`}
                title={actual?.detail ?? (verified ? 'read back from /proc and matches the plan' : '')}
              >
                {actual ? `${cpuList(actual.cpus)} ${verified ? '✓' : '✗'}` : '—'}
              </td>
              <td class="mono">{cpuList(entry.commCpus)}</td>
              <td class="mono">{entry.memNodes.length ? `NUMA ${cpuList(entry.memNodes)}` : 'any'}</td>
              <td class="mono">
                {entry.nics.length
                  ? entry.nics
                      .map(
                        (n) =>
                          `${n.device}:${n.port}${n.gidIndex !== null ? ` · GID ${n.gidIndex}` : ''}${n.gid ? ` (${n.gid})` : ''}`,
                      )
                      .join(', ')
                  : 'TCP'}
              </td>
              <td>{entry.gpus.join(',')}</td>
              <td>
                {r ? <StateBadge state={r.state} /> : ''}
                {r?.error ? <span class="muted"> {r.error}</span> : ''}
              </td>
              <td>{r ? (r.signal ?? r.exitCode ?? '') : ''}</td>
              <td>
                <details>
                  <summary>{count(Object.keys(entry.env).length, 'variable')}</summary>
                  <table class="env">
                    <tbody>
                      {Object.entries(entry.env).map(([k, v]) => (
                        <tr key={k}>
                          <th scope="row" class="mono">
                            {k}
                          </th>
                          <td class="mono">{v}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </details>
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

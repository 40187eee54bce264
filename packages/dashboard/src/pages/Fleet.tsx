// The fleet: every node with its state, hardware, running ranks and, once run, the doctor's verdict.
import { useState } from 'preact/hooks';
import { api, must, type DoctorResult, type SessionView } from '../api/client';
import { useResource } from '../hooks';
import { href } from '../router';
import { StateBadge, bytes, count } from '../format';

export function Fleet({ session }: { session: SessionView }) {
  const nodes = useResource(
    () => must(api.GET('/v1/nodes')),
    [],
    (c) => c.kind === 'node' || c.kind === 'job',
  );
  const [doctor, setDoctor] = useState<DoctorResult | null>(null);
  const [doctorState, setDoctorState] = useState<string | null>(null);
  const runDoctor = async () => {
    setDoctorState('running the doctor on every node…');
    try {
      setDoctor(await must(api.POST('/v1/doctor', { body: { pattern: 'all' } })));
      setDoctorState(null);
    } catch (err) {
      setDoctorState(`doctor failed: ${(err as Error).message}`);
    }
  };
  const verdict = (node: string) => {
    const checks = doctor?.checks.filter((c) => c.node === node) ?? [];
    if (!doctor) return '';
    const fail = checks.filter((c) => c.status === 'FAIL').length;
    const warn = checks.filter((c) => c.status === 'WARN').length;
    return fail ? `${fail} FAIL` : warn ? `${warn} WARN` : 'PASS';
  };
  const list = nodes.data?.nodes ?? [];
  return (
    <>
      <h1>Fleet</h1>
      {nodes.error && (
        <p role="alert" class="error">
          {nodes.error}
        </p>
      )}
      <p class="summary">
        {count(list.length, 'node')} · {list.filter((n) => n.state === 'ready').length} ready ·{' '}
        {list.filter((n) => n.drain).length} drained ·{' '}
        {count(
          list.reduce((a, n) => a + (n.ranksRunning ?? 0), 0),
          'rank',
        )}{' '}
        running
        {session.grants['doctor'] && (
          <>
            {' '}
            <button
              type="button"
              onClick={runDoctor}
              disabled={doctorState !== null && !doctorState.startsWith('doctor failed')}
            >
              Run doctor
            </button>
          </>
        )}
      </p>
      {doctorState && <p role="status">{doctorState}</p>}
      <table class="grid" aria-label="Nodes">
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">State</th>
            <th scope="col">CPU</th>
            <th scope="col">NUMA</th>
            <th scope="col">Memory</th>
            <th scope="col">GPUs</th>
            <th scope="col">NICs</th>
            <th scope="col">RDMA ports</th>
            <th scope="col">Ranks</th>
            {doctor && <th scope="col">Doctor</th>}
          </tr>
        </thead>
        <tbody>
          {list.map((n) => {
            const hw = n.hardware;
            return (
              <tr key={n.name} data-node={n.name}>
                <td>
                  <a href={href.node(n.name)}>{n.name}</a>
                </td>
                <td>
                  <StateBadge state={n.state} />
                  {n.drain && (
                    <span class="badge drained" title={n.drain.reason}>
                      drained
                    </span>
                  )}
                  {!n.connected && n.state === 'ready' && <span class="muted"> (reconnecting)</span>}
                </td>
                <td>{hw ? `${hw.packages} × ${hw.cores / Math.max(1, hw.packages)} cores, ${hw.pus} threads` : '…'}</td>
                <td>{hw?.numaNodes ?? ''}</td>
                <td>{hw ? bytes(hw.memoryBytes) : ''}</td>
                <td>{hw?.gpus ?? ''}</td>
                <td>{hw?.nics ?? ''}</td>
                <td>{hw ? (hw.rdmaPorts ? `${hw.rdmaPortsActive}/${hw.rdmaPorts} active` : 'none') : ''}</td>
                <td>{n.ranksRunning ?? 0}</td>
                {doctor && <td class={`doctor ${verdict(n.name).split(' ').pop()}`}>{verdict(n.name)}</td>}
              </tr>
            );
          })}
        </tbody>
      </table>
      {doctor && doctor.checks.some((c) => c.status !== 'PASS') && (
        <section aria-label="Doctor findings">
          <h2>Doctor findings</h2>
          <ul class="findings">
            {doctor.checks
              .filter((c) => c.status !== 'PASS')
              .map((c, i) => (
                <li key={i} class={c.status}>
                  <strong>{c.status}</strong> {c.node ?? 'fleet'} · {c.check}: {c.message}
                  {c.fix && <div class="mono">fix: {c.fix}</div>}
                </li>
              ))}
          </ul>
        </section>
      )}
    </>
  );
}

// A node's topology drawn as lstopo draws it, with ranks coloured over the CPUs they hold.
import type { Facts } from '../api/client';
import { formatKb, machineBox, type Devices, type NumaBox } from '../topology/model';
import { rankColour, type Overlay } from '../topology/overlay';
import { count } from '../format';

export function Topology({ node, facts, overlay }: { node: string; facts: Facts; overlay: Overlay }) {
  const machine = machineBox(facts);
  return (
    <figure class="machine" aria-label={`Topology of ${node}`} data-testid="topology">
      <figcaption>
        Machine {node} · {formatKb(facts.memory.totalKb)}
        {facts.memory.cgroupLimitKb ? ` (cgroup limit ${formatKb(facts.memory.cgroupLimitKb)})` : ''} ·{' '}
        {facts.cpu.model ?? 'unknown CPU'}
      </figcaption>
      <div class="packages">
        {machine.packages.map((p) => (
          <section class="package" aria-label={`Package ${p.id}`} data-package={p.id} key={p.id}>
            <h4>Package {p.id < 0 ? '?' : p.id}</h4>
            {p.numa.map((n) => (
              <NumaNode numa={n} overlay={overlay} allowed={machine.allowed} key={n.id} />
            ))}
          </section>
        ))}
        {machine.cpuless.map((n) => (
          <section
            class="numa cpuless"
            aria-label={`NUMA node ${n.id} (memory only)`}
            data-numa={n.id}
            key={`m${n.id}`}
          >
            <h5>
              NUMA {n.id} · {formatKb(n.memTotalKb)} · no CPUs
            </h5>
          </section>
        ))}
      </div>
      <DeviceList devices={machine.devices} overlay={overlay} where="machine (no NUMA affinity)" />
    </figure>
  );
}

function NumaNode({ numa, overlay, allowed }: { numa: NumaBox; overlay: Overlay; allowed: ReadonlySet<number> }) {
  return (
    <section class="numa" aria-label={numa.id < 0 ? 'No NUMA node' : `NUMA node ${numa.id}`} data-numa={numa.id}>
      <h5>
        {numa.id < 0 ? 'NUMA ?' : `NUMA ${numa.id}`} · {formatKb(numa.memTotalKb)}
      </h5>
      <div class="cores">
        {numa.cores.map((c) => (
          <div class="core" data-core={c.coreId} key={`${c.coreId}-${c.pus[0]}`} title={`Core ${c.coreId}`}>
            {c.pus.map((cpu) => {
              const h = overlay.cpus.get(cpu);
              const label = h
                ? `CPU ${cpu}: rank ${h.rank}${h.kind === 'comm' ? ' comm worker' : ''} of job ${h.jobId}${h.mismatch ? ', not where the agent found it bound' : ''}`
                : `CPU ${cpu}${allowed.has(cpu) ? '' : ' (not allowed to the agent)'}`;
              return (
                <span
                  class={`pu${h ? ` held ${h.kind}` : ''}${h?.mismatch ? ' mismatch' : ''}${allowed.has(cpu) ? '' : ' disallowed'}`}
                  data-cpu={cpu}
                  data-rank={h?.rank}
                  style={h ? { background: rankColour(h.rank) } : undefined}
                  title={label}
                  aria-label={label}
                  key={cpu}
                >
                  <span class="pu-id">{cpu}</span>
                  {h && <span class="pu-rank">r{h.rank}</span>}
                </span>
              );
            })}
          </div>
        ))}
      </div>
      <DeviceList devices={numa.devices} overlay={overlay} where={`NUMA ${numa.id}`} />
    </section>
  );
}

function DeviceList({ devices, overlay, where }: { devices: Devices; overlay: Overlay; where: string }) {
  if (!devices.rdma.length && !devices.nics.length && !devices.gpus.length) return null;
  return (
    <ul class="devices" aria-label={`Devices on ${where}`}>
      {devices.rdma.map((d) => (
        <li class="device rdma" data-rdma={d.name} key={d.name}>
          <strong>{d.name}</strong> <RankTags ranks={overlay.devices.get(`rdma:${d.name}`)} />
          <span class="muted"> {d.hcaType ?? d.transport}</span>
          <ul>
            {d.ports.map((p) => (
              <li key={p.port}>
                port {p.port} <span class={`state ${p.state === 'ACTIVE' ? 'ok' : 'bad'}`}>{p.state}</span>{' '}
                {p.linkLayer}
                {p.rate ? ` · ${p.rate}` : ''}
                {p.netdev ? ` · ${p.netdev}` : ''}
                {p.gids.length > 0 && (
                  <details>
                    <summary>{count(p.gids.length, 'GID')}</summary>
                    <table class="gids">
                      <thead>
                        <tr>
                          <th scope="col">index</th>
                          <th scope="col">type</th>
                          <th scope="col">GID</th>
                          <th scope="col">netdev</th>
                        </tr>
                      </thead>
                      <tbody>
                        {p.gids.map((g) => (
                          <tr key={g.index}>
                            <td>{g.index}</td>
                            <td>{g.type}</td>
                            <td class="mono">{g.ipv4 ?? g.gid}</td>
                            <td>{g.netdev ?? ''}</td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  </details>
                )}
              </li>
            ))}
          </ul>
        </li>
      ))}
      {devices.nics.map((n) => (
        <li class="device nic" data-nic={n.name} key={n.name}>
          <strong>{n.name}</strong> <span class={`state ${n.state === 'up' ? 'ok' : 'bad'}`}>{n.state}</span>
          {n.speedMbps ? ` · ${n.speedMbps / 1000} Gb/s` : ''}
        </li>
      ))}
      {devices.gpus.map((g) => (
        <li class="device gpu" data-gpu={g.index} key={g.pciAddress}>
          <strong>GPU {g.index}</strong> <RankTags ranks={overlay.devices.get(`gpu:${g.index}`)} />
          <span class="muted">
            {' '}
            {g.model ?? g.vendor} · {g.pciAddress}
            {g.allowed === false ? ' · not allowed (the agent was not granted it)' : ''}
          </span>
        </li>
      ))}
    </ul>
  );
}

export function RankTags({ ranks }: { ranks: number[] | undefined }) {
  if (!ranks?.length) return null;
  return (
    <>
      {ranks.map((r) => (
        <span class="rank-tag" style={{ background: rankColour(r) }} key={r}>
          r{r}
        </span>
      ))}
    </>
  );
}

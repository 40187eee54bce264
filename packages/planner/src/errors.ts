// An impossible placement spec. The message names the node and the reason, and ends
// with the nearest feasible spec when one is obvious, so that the user can retry at
// once; `suggestion` carries the same change as spec fields for REST clients.
import { RankdError, type PlacementSpec, type PlanErrorCode } from '@rankd/protocol';

export class PlanError extends RankdError {
  override readonly name = 'PlanError';
  readonly node: string | undefined;
  readonly suggestion: Partial<PlacementSpec> | undefined;

  constructor(
    code: PlanErrorCode,
    /** The reason alone, without the node and the suggestion. */
    readonly reason: string,
    where: { node?: string; suggestion?: Partial<PlacementSpec> } = {},
  ) {
    const parts = [where.node === undefined ? reason : `node ${where.node}: ${reason}`];
    if (where.suggestion) parts.push(`nearest feasible spec: ${formatSpecFlags(where.suggestion)}`);
    super(code, parts.join('; '), {
      ...(where.node === undefined ? {} : { node: where.node }),
      ...(where.suggestion ? { suggestion: where.suggestion } : {}),
    });
    this.node = where.node;
    this.suggestion = where.suggestion;
  }

  /** The same refusal with the change said another way (in the flags the user gave). */
  withSuggestion(suggestion: Partial<PlacementSpec>): PlanError {
    return new PlanError(this.code as PlanErrorCode, this.reason, {
      ...(this.node === undefined ? {} : { node: this.node }),
      suggestion,
    });
  }
}

// Flag spelling of spec fields, as `rankd plan` and `rankd run` take them.
const FLAGS: Record<string, string> = {
  nodes: '-N',
  nodelist: '--nodelist',
  group: '--group',
  ntasks: '-n',
  ranksPerNode: '--ranks-per-node',
  distribution: '--distribution',
  cpusPerRank: '-c',
  oversubscribe: '--oversubscribe',
  ht: '--ht',
  commWorkers: '--comm-workers',
  commOn: '--comm-on',
  memBind: '--mem-bind',
  nic: '--nic',
  gpusPerRank: '--gpus-per-rank',
  gpuBind: '--gpu-bind',
  masterPort: '--master-port',
  envProfile: '--env-profile',
};

/** Renders spec fields as CLI flags: {cpusPerRank: 52} → "-c 52". */
export function formatSpecFlags(spec: Partial<PlacementSpec>): string {
  const out: string[] = [];
  for (const [key, value] of Object.entries(spec)) {
    if (value === undefined) continue;
    if (key === 'env') {
      for (const [k, v] of Object.entries(value as Record<string, string>)) out.push(`--env ${k}=${v}`);
      continue;
    }
    const flag = FLAGS[key] ?? `--${key}`;
    if (typeof value === 'boolean') {
      if (value) out.push(flag);
      continue;
    }
    out.push(`${flag} ${Array.isArray(value) ? value.join(',') : String(value)}`);
  }
  return out.join(' ');
}

// Agent configuration: a file (/etc/rankd/agent.json), then the environment, then
// flags — each layer overriding the one before, as systemd units and humans expect.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import { nodeNameProblem } from '@rankd/protocol';

export const AgentConfigFile = Type.Object(
  {
    controller: Type.Optional(Type.String()),
    /** A file holding a join token (only read while the agent is not enrolled). */
    tokenFile: Type.Optional(Type.String()),
    /** A join token itself (prefer tokenFile: command lines are visible to every user). */
    joinToken: Type.Optional(Type.String()),
    /** sha256:HEX of the controller CA's public key, as `rankd join-command` prints it. */
    caHash: Type.Optional(Type.String()),
    /** Where the node key, certificate and pinned CA live (mode 0600). */
    stateDir: Type.Optional(Type.String()),
    name: Type.Optional(Type.String()),
    labels: Type.Optional(Type.Record(Type.String(), Type.String())),
    address: Type.Optional(Type.String()),
    spoolDir: Type.Optional(Type.String()),
    factsRoot: Type.Optional(Type.String()),
    factsIntervalMs: Type.Optional(Type.Integer({ minimum: 1000 })),
    allowRoot: Type.Optional(Type.Boolean()),
    /**
     * An agent of one allocation or pod set (rankd up --slurm, --pods): it runs as the
     * invoking user, runs ranks as that user only, and ends them when it stops.
     */
    ephemeral: Type.Optional(Type.Boolean()),
    /** Cap of the reconnect backoff. */
    reconnectMaxMs: Type.Optional(Type.Integer({ minimum: 100 })),
  },
  { additionalProperties: false },
);
export type AgentConfigFile = Type.Static<typeof AgentConfigFile>;

export interface AgentConfig {
  controller: string;
  tokenFile: string | null;
  joinToken: string | null;
  caHash: string | null;
  stateDir: string;
  name: string;
  labels: Record<string, string>;
  address: string | null;
  spoolDir: string;
  factsRoot: string;
  factsIntervalMs: number;
  allowRoot: boolean;
  ephemeral: boolean;
  reconnectMaxMs: number;
}

export const DEFAULT_CONFIG_FILE = '/etc/rankd/agent.json';
const validateFile = Compile(AgentConfigFile);

/** Reads the config file; a missing default file is fine, a missing explicit one is not. */
export function readConfigFile(path: string, explicit: boolean): AgentConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (!explicit && (err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new Error(`cannot read agent config ${path}: ${(err as Error).message}`, { cause: err });
  }
  // an empty file (or /dev/null) is a config with no settings
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`agent config ${path} is not JSON: ${(err as Error).message}`, { cause: err });
  }
  if (!validateFile.Check(value)) {
    const first = [...validateFile.Errors(value)][0] as { instancePath?: string; message?: string } | undefined;
    throw new Error(`agent config ${path}: ${first?.instancePath || '/'} ${first?.message ?? 'is invalid'}`);
  }
  return value;
}

export function configFromEnv(env: NodeJS.ProcessEnv): AgentConfigFile {
  const out: AgentConfigFile = {};
  if (env['RANKD_CONTROLLER']) out.controller = env['RANKD_CONTROLLER'];
  if (env['RANKD_TOKEN_FILE']) out.tokenFile = env['RANKD_TOKEN_FILE'];
  if (env['RANKD_JOIN_TOKEN']) out.joinToken = env['RANKD_JOIN_TOKEN'];
  if (env['RANKD_CA_HASH']) out.caHash = env['RANKD_CA_HASH'];
  if (env['RANKD_STATE_DIR']) out.stateDir = env['RANKD_STATE_DIR'];
  if (env['RANKD_NODE_NAME']) out.name = env['RANKD_NODE_NAME'];
  if (env['RANKD_LABELS']) out.labels = parseLabels(env['RANKD_LABELS'].split(','));
  if (env['RANKD_ADDRESS']) out.address = env['RANKD_ADDRESS'];
  if (env['RANKD_SPOOL_DIR']) out.spoolDir = env['RANKD_SPOOL_DIR'];
  if (env['RANKD_FACTS_ROOT']) out.factsRoot = env['RANKD_FACTS_ROOT'];
  if (env['RANKD_RECONNECT_MAX_MS']) out.reconnectMaxMs = Number(env['RANKD_RECONNECT_MAX_MS']);
  return out;
}

/** "k=v" pairs to a record; a pair without "=" is an error that names it. */
export function parseLabels(pairs: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of pairs) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`label "${pair}" is not key=value`);
    labels[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return labels;
}

/** Merges the layers and fills defaults; throws naming the first missing setting. */
export function resolveAgentConfig(...layers: AgentConfigFile[]): AgentConfig {
  const merged: AgentConfigFile = {};
  for (const layer of layers) {
    for (const [k, v] of Object.entries(layer)) {
      if (v === undefined) continue;
      if (k === 'labels') merged.labels = { ...merged.labels, ...(v as Record<string, string>) };
      else (merged as Record<string, unknown>)[k] = v;
    }
  }
  if (!merged.controller)
    throw new Error('no controller URL: set "controller" in the config file, RANKD_CONTROLLER, or --controller');
  if (!/^https:\/\//i.test(merged.controller))
    throw new Error(`the controller URL must be https:// (got "${merged.controller}"): the controller speaks TLS only`);
  const name = merged.name ?? hostname().split('.')[0]!;
  const problem = nodeNameProblem(name);
  if (problem) throw new Error(problem);
  return {
    controller: merged.controller,
    tokenFile: merged.tokenFile ?? null,
    joinToken: merged.joinToken ?? null,
    caHash: merged.caHash ?? null,
    stateDir: merged.stateDir ?? '/var/lib/rankd/agent',
    name,
    labels: merged.labels ?? {},
    address: merged.address ?? null,
    spoolDir: merged.spoolDir ?? '/var/lib/rankd/spool',
    factsRoot: merged.factsRoot ?? '/',
    factsIntervalMs: merged.factsIntervalMs ?? 30_000,
    allowRoot: merged.allowRoot ?? false,
    ephemeral: merged.ephemeral ?? false,
    reconnectMaxMs: merged.reconnectMaxMs ?? 30_000,
  };
}

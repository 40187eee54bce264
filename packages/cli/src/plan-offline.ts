// `rankd plan --facts-dir`: the rank map planned here, on NODE.json facts files, with no
// controller. Its own module because it is the only part of the CLI that needs the
// planner and the facts schema (TypeBox): `rankd plan` against a controller, and every
// other command, never load them.
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Compile } from 'typebox/compile';
import { Facts, type PlacementSpec, type PlanAnswer, type RankMap } from '@rankd/protocol';
import { allocationOf, PlanError, planRankMap, withHolds, type PlannerNode } from '@rankd/planner';
import { CliError, ExitCode } from './exit-codes.js';

/**
 * The answer POST /v1/plan would give on a cluster of exactly these nodes, and the facts by
 * node name (the bindings view draws sockets and cores from them). Nothing runs on files, so
 * every core is free and the job would start now: `schedule` says so, in the REST shape.
 */
export function planOffline(
  factsDir: string,
  addressPairs: readonly string[],
  spec: PlacementSpec,
): { answer: PlanAnswer; facts: Record<string, Facts> } {
  const nodes = readFactsDir(factsDir, parseAddresses(addressPairs));
  const answer: PlanAnswer = { ...plan(nodes, spec), schedule: { startsNow: true, reason: null } };
  return { answer, facts: Object.fromEntries(nodes.map((n) => [n.name, n.facts])) };
}

function plan(nodes: PlannerNode[], spec: PlacementSpec): RankMap {
  try {
    // what the job would hold on idle nodes, as the controller counts it
    const map = planRankMap(nodes, spec);
    const factsOf = (name: string) => nodes.find((n) => n.name === name)!.facts;
    return withHolds(map, allocationOf(map, spec, factsOf), factsOf);
  } catch (err) {
    // the same exit code and wording as when the controller refuses the spec
    if (err instanceof PlanError)
      throw new CliError(`${err.message} (${err.code})`, ExitCode.RemoteFailure, err.suggestion);
    throw err;
  }
}

function parseAddresses(pairs: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0 || eq === pair.length - 1) throw new CliError(`--address takes NODE=IP, not "${pair}"`, ExitCode.Usage);
    out.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return out;
}

const checkFacts = Compile(Facts);

function readFactsDir(dir: string, addresses: Map<string, string>): PlannerNode[] {
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort();
  } catch (err) {
    throw new CliError(`cannot read --facts-dir ${dir}: ${(err as Error).message}`, ExitCode.Software);
  }
  if (files.length === 0) throw new CliError(`--facts-dir ${dir} holds no NODE.json file`, ExitCode.Usage);
  const nodes = files.map((file) => {
    const path = join(dir, file);
    let facts: unknown;
    try {
      facts = JSON.parse(readFileSync(path, 'utf8'));
    } catch (err) {
      throw new CliError(`cannot read facts ${path}: ${(err as Error).message}`, ExitCode.Software);
    }
    if (!checkFacts.Check(facts)) {
      const first = [...checkFacts.Errors(facts)].slice(0, 3) as { instancePath?: string; message?: string }[];
      const why = first.map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`).join('; ');
      throw new CliError(`${path} is not facts as \`rankd facts --json\` writes them: ${why}`, ExitCode.Usage);
    }
    const name = basename(file, '.json');
    return { name, address: addresses.get(name) ?? liveAddress(facts), facts };
  });
  for (const name of addresses.keys()) {
    if (!nodes.some((n) => n.name === name))
      throw new CliError(`--address names ${name}, which has no ${name}.json in ${dir}`, ExitCode.Usage);
  }
  return nodes;
}

/** The first IPv4 address of a physical interface that is up, when the facts were read live. */
function liveAddress(facts: Facts): string | null {
  for (const nic of facts.nics) {
    if (nic.virtual || nic.state !== 'up') continue;
    const v4 = nic.addresses.find((a) => a.family === 'inet');
    if (v4) return v4.address;
  }
  return null;
}

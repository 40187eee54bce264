// Host patterns as Ansible reads them:
//
//   all  *           every host
//   gpu              a group (and its children), or a host of that name
//   node*  ~node\d+  globs and (anchored) regexes over group and host names
//   gpu[0] gpu[1:3]  subscripts into a group's hosts; the end is inclusive, as in Ansible
//   g1:g2  g1,g2     union
//   g1:&g2           intersection
//   g1:!g2           exclusion
//   rack=r1          hosts whose labels or inventory vars have rack=r1 (a rankd addition)
//
// As in Ansible, unions apply first, then intersections, then exclusions, whatever their
// order in the pattern; a pattern of only & and ! terms starts from all. Unlike Ansible,
// a term that matches nothing is an error naming it, never a silent empty set: a typo in
// `!gpu07` must not run a command on gpu07.
import { FleetErrorCode, RankdError } from '@rankd/protocol';
import { plural } from '@rankd/protocol/plural';

export interface PatternUniverse {
  /** Every host, in the order results are listed. */
  readonly hosts: readonly string[];
  /** Members of each group (all and ungrouped included), in host order. */
  readonly groups: ReadonlyMap<string, readonly string[]>;
  /** What a key=value term matches: node labels and inventory vars. */
  attributes(host: string): Readonly<Record<string, string>>;
}

interface Term {
  op: 'union' | 'and' | 'not';
  text: string;
}

const SUBSCRIPT = /^(.+)\[(?:(-?\d+)|(\d*):(-?\d*))\]$/;

export function matchPattern(pattern: string, universe: PatternUniverse): string[] {
  const terms = splitPattern(pattern);
  const unions = terms.filter((t) => t.op === 'union');
  let selected = new Set<string>(unions.length === 0 ? universe.hosts : []);
  for (const t of unions) for (const h of evaluate(t.text, universe)) selected.add(h);
  for (const t of terms.filter((t) => t.op === 'and')) {
    const keep = new Set(evaluate(t.text, universe));
    selected = new Set([...selected].filter((h) => keep.has(h)));
  }
  for (const t of terms.filter((t) => t.op === 'not')) for (const h of evaluate(t.text, universe)) selected.delete(h);
  return universe.hosts.filter((h) => selected.has(h));
}

/** Splits on "," and ":" outside brackets, so `gpu[0:3]` stays one term. */
export function splitPattern(pattern: string): Term[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of pattern) {
    if (ch === '[') depth++;
    else if (ch === ']') depth = Math.max(0, depth - 1);
    if ((ch === ',' || ch === ':') && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  parts.push(current);
  return parts.map((raw) => {
    const part = raw.trim();
    const op = part.startsWith('!') ? 'not' : part.startsWith('&') ? 'and' : 'union';
    const text = op === 'union' ? part : part.slice(1).trim();
    if (text === '') throw invalid(`pattern "${pattern}" has an empty term`, pattern);
    return { op, text };
  });
}

function evaluate(term: string, u: PatternUniverse): string[] {
  if (term === 'all' || term === '*') return [...u.hosts];
  const sub = SUBSCRIPT.exec(term);
  if (sub) return subscript(term, evaluate(sub[1]!, u), sub);
  let found: Set<string>;
  if (term.startsWith('~')) {
    let re: RegExp;
    try {
      re = new RegExp(`^(?:${term.slice(1)})`);
    } catch (err) {
      throw invalid(`bad regular expression in "${term}": ${(err as Error).message}`, term);
    }
    found = byName(u, (name) => re.test(name));
  } else if (term.includes('=')) {
    const eq = term.indexOf('=');
    const key = term.slice(0, eq);
    const value = term.slice(eq + 1);
    found = new Set(u.hosts.filter((h) => u.attributes(h)[key] === value));
  } else if (/[*?]/.test(term)) {
    const re = globRegExp(term);
    found = byName(u, (name) => re.test(name));
  } else {
    const group = u.groups.get(term);
    // an existing group with no hosts is a legitimate empty answer, not a typo
    if (group) return [...group];
    found = new Set(u.hosts.includes(term) ? [term] : []);
  }
  if (found.size === 0) {
    throw new RankdError(FleetErrorCode.PatternUnknown, `"${term}" matches no group, host or node`, { term });
  }
  return u.hosts.filter((h) => found.has(h));
}

/** Globs and regexes see the named groups, not the implicit ones: `a*` must not mean `all`. */
function byName(u: PatternUniverse, test: (name: string) => boolean): Set<string> {
  const out = new Set<string>();
  for (const [name, members] of u.groups)
    if (name !== 'all' && name !== 'ungrouped' && test(name)) for (const h of members) out.add(h);
  for (const h of u.hosts) if (test(h)) out.add(h);
  return out;
}

function subscript(term: string, hosts: string[], m: RegExpExecArray): string[] {
  const at = (i: number) => (i < 0 ? hosts.length + i : i);
  if (m[2] !== undefined) {
    const i = at(Number(m[2]));
    const host = hosts[i];
    if (host === undefined)
      throw invalid(`${term}: index ${m[2]} is outside the ${plural(hosts.length, 'host')} of ${m[1]}`, term);
    return [host];
  }
  const start = m[3] === '' ? 0 : Number(m[3]);
  const end = m[4] === '' ? hosts.length - 1 : at(Number(m[4]));
  if (start >= hosts.length || end < start)
    throw invalid(`${term}: range selects none of the ${plural(hosts.length, 'host')} of ${m[1]}`, term);
  return hosts.slice(start, end + 1);
}

function globRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|\\[\]]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`);
}

function invalid(message: string, term: string): RankdError {
  return new RankdError(FleetErrorCode.PatternInvalid, message, { term });
}

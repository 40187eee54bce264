// MPI and DeepSpeed hostfiles: one host per line with its slots, comments after `#`.
//
//   node01 slots=8              Open MPI, DeepSpeed
//   node02 slots=8 max_slots=16 Open MPI (max-slots also)
//   node03:8                    MPICH / Intel MPI
//   node04                      one slot
//
// The hosts join one group (default "hostfile"); slots become host vars so that
// `rankd inventory` shows them and patterns can select on them (slots=8).
import { addHost, emptyInventory, finish, GROUP_NAME, type InventoryDoc, type Vars } from './model.js';
import { parseError } from './parse-error.js';

export const DEFAULT_HOSTFILE_GROUP = 'hostfile';

const HOST = /^[A-Za-z0-9_.-]+$/;

export function parseHostfile(content: string, source: string, group = DEFAULT_HOSTFILE_GROUP): InventoryDoc {
  if (!GROUP_NAME.test(group))
    throw parseError(source, null, `group name "${group}" may hold only letters, digits, "_", "." and "-"`);
  const doc = emptyInventory();
  const firstLine = new Map<string, number>();
  content.split(/\r?\n/).forEach((raw, index) => {
    const lineNo = index + 1;
    const line = raw.replace(/#.*$/, '').trim();
    if (line === '') return;
    const fail = (message: string) => parseError(source, lineNo, message);
    const [first, ...rest] = line.split(/\s+/) as [string, ...string[]];
    let host = first;
    const vars: Vars = {};
    const mpich = /^([^:]+):(\d+)$/.exec(first);
    if (mpich) {
      host = mpich[1]!;
      vars['slots'] = count(mpich[2]!, 'slots', fail);
    }
    if (!HOST.test(host)) throw fail(`"${host}" is not a host name`);
    for (const word of rest) {
      const m = /^(slots|max_slots|max-slots)=(.*)$/.exec(word);
      if (!m) throw fail(`unexpected "${word}" after host ${host} (expected slots=N or max_slots=N)`);
      const key = m[1] === 'slots' ? 'slots' : 'max_slots';
      if (vars[key] !== undefined) throw fail(`${key} given twice for host ${host}`);
      vars[key] = count(m[2]!, m[1]!, fail);
    }
    if (vars['max_slots'] !== undefined && Number(vars['max_slots']) < Number(vars['slots'] ?? 1)) {
      throw fail(`host ${host}: max_slots=${vars['max_slots']} is below slots=${vars['slots'] ?? 1}`);
    }
    const seen = firstLine.get(host);
    if (seen !== undefined) throw fail(`host ${host} is listed twice (first on line ${seen})`);
    firstLine.set(host, lineNo);
    vars['slots'] ??= '1';
    addHost(doc, group, host, vars);
  });
  return finish(doc);
}

function count(text: string, key: string, fail: (message: string) => Error): string {
  if (!/^\d+$/.test(text) || Number(text) < 1) throw fail(`${key}=${text} is not a positive integer`);
  return String(Number(text));
}

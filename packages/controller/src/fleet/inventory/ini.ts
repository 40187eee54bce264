// Ansible INI inventories: `[group]` sections of host lines with `k=v` vars,
// `[group:vars]` sections of `k=v` lines, `[group:children]` sections of group names.
// Host lines before the first section are ungrouped. Every error names the line.
//
// As in Ansible, a group named only as a child, or only in a `[group:vars]` header, must
// be declared by a section of its own somewhere in the file; otherwise the reference is
// reported at the line that made it.
import { expandHostRange } from './host-range.js';
import {
  GROUP_NAME,
  UNGROUPED,
  addChild,
  addHost,
  emptyInventory,
  ensureGroup,
  finish,
  type InventoryDoc,
  type Vars,
} from './model.js';
import { parseError } from './parse-error.js';
import { splitAssignment, splitWords } from './tokens.js';

type Section = { kind: 'hosts' | 'vars' | 'children'; group: string };

const HEADER = /^\[([^:\]\s]+)(?::([A-Za-z_]+))?\]\s*(?:[#;].*)?$/;

export function parseIni(content: string, source: string): InventoryDoc {
  const doc = emptyInventory();
  const declared = new Set<string>([UNGROUPED, 'all']);
  /** Groups referenced before (or without) their own section, with the first line that did. */
  const pending = new Map<string, { line: number; what: string }>();
  let section: Section = { kind: 'hosts', group: UNGROUPED };

  const lines = content.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const lineNo = index + 1;
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) return;
    const fail = (message: string) => parseError(source, lineNo, message);

    if (line.startsWith('[')) {
      const m = HEADER.exec(line);
      if (!m) {
        if (!line.includes(']')) throw fail(`section header "${line}" has no closing "]"`);
        throw fail(`"${line}" is not a section header ([group], [group:vars] or [group:children])`);
      }
      const group = m[1]!;
      const suffix = m[2];
      if (!GROUP_NAME.test(group)) throw fail(`group name "${group}" may hold only letters, digits, "_", "." and "-"`);
      if (suffix !== undefined && suffix !== 'vars' && suffix !== 'children') {
        throw fail(`section [${group}:${suffix}] has unknown type "${suffix}" (expected vars or children)`);
      }
      section = { kind: suffix === undefined ? 'hosts' : suffix, group };
      if (section.kind === 'vars') {
        if (!declared.has(group) && !pending.has(group))
          pending.set(group, { line: lineNo, what: `[${group}:vars] names group ${group}, which no section declares` });
      } else {
        declared.add(group);
        pending.delete(group);
        ensureGroup(doc, group);
      }
      return;
    }

    if (section.kind === 'vars') {
      const kv = splitAssignment(line);
      if (!kv) throw fail(`expected "key=value" in [${section.group}:vars], got "${line}"`);
      ensureGroup(doc, section.group).vars[kv[0]] = unquote(kv[1]);
      return;
    }

    if (section.kind === 'children') {
      const m = /^([^:\]\s]+)\s*(?:[#;].*)?$/.exec(line);
      if (!m) throw fail(`expected a group name in [${section.group}:children], got "${line}"`);
      const child = m[1]!;
      if (!GROUP_NAME.test(child)) throw fail(`group name "${child}" may hold only letters, digits, "_", "." and "-"`);
      if (child === section.group) throw fail(`group ${child} cannot be its own child`);
      addChild(doc, section.group, child);
      if (!declared.has(child) && !pending.has(child))
        pending.set(child, {
          line: lineNo,
          what: `[${section.group}:children] names group ${child}, which no section declares`,
        });
      return;
    }

    let words: string[];
    try {
      words = splitWords(line);
    } catch (err) {
      throw fail((err as Error).message);
    }
    if (words.length === 0) return;
    const [pattern, ...assignments] = words as [string, ...string[]];
    const vars: Vars = {};
    for (const word of assignments) {
      const kv = splitAssignment(word);
      if (!kv) throw fail(`expected "key=value" after host ${pattern}, got "${word}"`);
      vars[kv[0]] = kv[1];
    }
    const { name, port } = splitPort(pattern);
    if (port !== null) vars['ansible_port'] ??= port;
    let hosts: string[];
    try {
      hosts = expandHostRange(name);
    } catch (err) {
      throw fail(`host ${name}: ${(err as Error).message}`);
    }
    for (const host of hosts) {
      if (!/^[A-Za-z0-9_.:-]+$/.test(host)) throw fail(`host name "${host}" has characters a host name cannot have`);
      addHost(doc, section.group, host, vars);
    }
  });

  for (const [, ref] of pending) throw parseError(source, ref.line, ref.what);
  try {
    return finish(doc);
  } catch (err) {
    throw parseError(source, null, (err as Error).message);
  }
}

/** `host:2222` → port 2222; IPv6 addresses keep their colons (`[fe80::1]:22` names a port). */
function splitPort(pattern: string): { name: string; port: string | null } {
  const bracketed = /^\[([^\]]+)\]:(\d+)$/.exec(pattern);
  if (bracketed && bracketed[1]!.includes(':')) return { name: bracketed[1]!, port: bracketed[2]! };
  // colons inside ranges ([01:32]) are not ports
  const outside = pattern.replace(/\[[^\]]*\]/g, '');
  if (!/^[^:]+:\d+$/.test(outside)) return { name: pattern, port: null };
  const colon = pattern.lastIndexOf(':');
  return { name: pattern.slice(0, colon), port: pattern.slice(colon + 1) };
}

function unquote(value: string): string {
  const m = /^(["'])(.*)\1$/.exec(value);
  return m ? m[2]! : value;
}

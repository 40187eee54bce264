// One entry for every inventory format: picks the parser (or detects it) and names the
// source in every error.
import type { InventoryFormat } from '@rankd/protocol';
import { parseHostfile } from './hostfile.js';
import { parseIni } from './ini.js';
import type { InventoryDoc } from './model.js';

export interface InventoryInput {
  content: string;
  format?: InventoryFormat | undefined;
  source?: string | undefined;
  group?: string | undefined;
}

export function parseInventory(input: InventoryInput): { doc: InventoryDoc; format: InventoryFormat } {
  const source = input.source ?? 'inventory';
  const format = input.format ?? detectFormat(input.content);
  const doc =
    format === 'hostfile' ? parseHostfile(input.content, source, input.group) : parseIni(input.content, source);
  return { doc, format };
}

/**
 * A `[section]` makes it INI; `slots=` or MPICH's `host:N` on every host line makes it a
 * hostfile. A bare list of names parses the same either way except for the group, and
 * is read as INI (ungrouped hosts) unless the caller says otherwise.
 */
export function detectFormat(content: string): InventoryFormat {
  const lines = content
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith(';'));
  if (lines.some((l) => l.startsWith('['))) return 'ini';
  if (lines.some((l) => /\s(slots|max_slots|max-slots)=/.test(l))) return 'hostfile';
  if (lines.length > 0 && lines.every((l) => /^[^\s:]+:\d+(\s*#.*)?$/.test(l))) return 'hostfile';
  return 'ini';
}

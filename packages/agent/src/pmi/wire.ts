// The PMI-1 "simple" wire format (MPICH's src/pmi/simple, which Intel MPI and MVAPICH
// speak too): one message per line, `cmd=NAME key=value …`, space-separated, no spaces
// inside keys or values, at most 1024 bytes a line. Multi-line commands (spawn) start
// with `mcmd=` and end with a line `endcmd`.

/** The client library's own line limit (PMIU_MAXLINE); a longer line is not PMI. */
export const PMI_MAX_LINE = 1024;

export interface PmiRequest {
  cmd: string;
  args: ReadonlyMap<string, string>;
  /** True for an `mcmd=` line: the command goes on until `endcmd`. */
  multi: boolean;
}

export class PmiWireError extends Error {
  override readonly name = 'PmiWireError';
}

/** Parses one line (without its newline); throws PmiWireError naming what is wrong. */
export function parsePmiLine(line: string): PmiRequest {
  const args = new Map<string, string>();
  let cmd: string | null = null;
  let multi = false;
  for (const token of line.trim().split(/ +/)) {
    if (token === '') continue;
    const eq = token.indexOf('=');
    if (eq <= 0) throw new PmiWireError(`"${clip(token)}" is not key=value`);
    const key = token.slice(0, eq);
    const value = token.slice(eq + 1);
    if ((key === 'cmd' || key === 'mcmd') && cmd === null) {
      cmd = value;
      multi = key === 'mcmd';
      continue;
    }
    args.set(key, value);
  }
  if (cmd === null || cmd === '') throw new PmiWireError(`no cmd= in "${clip(line)}"`);
  return { cmd, args, multi };
}

/** Formats an answer line: `cmd=NAME k=v …\n`. Values are ours or checked on the way in: no spaces, no newlines. */
export function formatPmi(cmd: string, fields: Record<string, string | number> = {}): string {
  let line = `cmd=${cmd}`;
  for (const [k, v] of Object.entries(fields)) line += ` ${k}=${v}`;
  return line + '\n';
}

/** Makes free text (an error message) safe as one PMI value. */
export function pmiText(text: string): string {
  return text.replace(/[\s=]+/g, '_').slice(0, 200);
}

function clip(s: string): string {
  return s.length > 60 ? `${s.slice(0, 60)}…` : s;
}

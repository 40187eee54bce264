// Ansible's host ranges: `node[01:32]`, `rack[1:8:2]-gpu`, `db-[a:f]`. A name may hold
// several ranges; each expands in turn, left to right.
const RANGE = /\[([^\]:]*):([^\]:]*)(?::(\d+))?\]/;

/** Expands every range in `name`; throws a plain Error whose message says what is wrong. */
export function expandHostRange(name: string): string[] {
  const m = RANGE.exec(name);
  if (!m) return [name];
  const head = name.slice(0, m.index);
  const tail = name.slice(m.index + m[0].length);
  const [beg = '', end = '', stepText] = [m[1], m[2], m[3]];
  const step = stepText === undefined ? 1 : Number(stepText);
  if (!Number.isInteger(step) || step < 1) throw new Error(`range ${m[0]} has a bad step`);
  if (end === '') throw new Error(`range ${m[0]} has no end`);
  const items: string[] = [];
  if (/^\d+$/.test(end) && (beg === '' || /^\d+$/.test(beg))) {
    const first = beg === '' ? 0 : Number(beg);
    const last = Number(end);
    // a leading zero fixes the width: [01:10] gives 01 … 10
    const width = beg.length > 1 && beg.startsWith('0') ? beg.length : 0;
    if (width && end.length !== width) throw new Error(`range ${m[0]}: begin and end must have the same width`);
    if (first > last) throw new Error(`range ${m[0]} ends before it begins`);
    if ((last - first) / step >= 100_000) throw new Error(`range ${m[0]} is too large`);
    for (let i = first; i <= last; i += step) items.push(String(i).padStart(width, '0'));
  } else if (/^[a-zA-Z]$/.test(beg) && /^[a-zA-Z]$/.test(end)) {
    const first = beg.charCodeAt(0);
    const last = end.charCodeAt(0);
    if (first > last) throw new Error(`range ${m[0]} ends before it begins`);
    for (let c = first; c <= last; c += step) items.push(String.fromCharCode(c));
  } else {
    throw new Error(`range ${m[0]} is neither numeric nor a single-letter range`);
  }
  return items.flatMap((item) => expandHostRange(head + item + tail));
}

// The one natural order of names, for the facts (interfaces, RDMA devices) and for the
// planner and scheduler (nodes, NICs): eth2 < eth10, mlx5_2 < mlx5_10, node2 < node10, as
// ICU's collation for 'en' with numeric ordering has it. One function, so that a device
// list read on a node and the same list ordered by the planner can never disagree.
// Creating that Intl.Collator loads ICU's collation data (~10 ms, a seventh of a whole
// `rankd facts`), and it costs about a microsecond per comparison; names made of lowercase
// letters, digits and _ - . (nearly every interface, device and node name) are ordered
// here the same way without it, and any other name is left to the collator, created on
// first need. test/facts/natural-order.test.ts holds the two to the same answers.

let collator: Intl.Collator | undefined;

export function naturalCompare(a: string, b: string): number {
  return simpleOrder(a, b) ?? (collator ??= new Intl.Collator('en', { numeric: true })).compare(a, b);
}

const DIGIT = 10;

/** ICU's primary order: _ - . before digits, digits before letters; undefined outside [a-z0-9_.-]. */
function weight(c: number): number | undefined {
  if (c >= 97 && c <= 122) return c;
  if (c >= 48 && c <= 57) return DIGIT;
  return c === 95 ? 1 : c === 45 ? 2 : c === 46 ? 3 : undefined;
}

function digitsEnd(s: string, from: number): number {
  let end = from;
  while (end < s.length && weight(s.charCodeAt(end)) === DIGIT) end++;
  return end;
}

function simpleName(s: string, from: number): boolean {
  for (let i = from; i < s.length; i++) if (weight(s.charCodeAt(i)) === undefined) return false;
  return true;
}

/**
 * -1, 0 or 1 as the collator would answer for two names of [a-z0-9_.-], digit runs compared
 * as numbers; undefined when either name has another character or a number with a leading
 * zero (ICU's tie-breaking rules for those are its own).
 */
export function simpleOrder(a: string, b: string): -1 | 0 | 1 | undefined {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(j);
    const wx = weight(x);
    const wy = weight(y);
    if (wx === undefined || wy === undefined) return undefined;
    if (wx === DIGIT && wy === DIGIT) {
      const endA = digitsEnd(a, i);
      const endB = digitsEnd(b, j);
      if ((x === 48 && endA - i > 1) || (y === 48 && endB - j > 1)) return undefined;
      if (endA - i !== endB - j) {
        // the order is decided here, but only for names the collator would read the same way
        if (!simpleName(a, endA) || !simpleName(b, endB)) return undefined;
        return endA - i < endB - j ? -1 : 1;
      }
      for (; i < endA; i++, j++) {
        const d = a.charCodeAt(i) - b.charCodeAt(j);
        if (d !== 0) return simpleName(a, i) && simpleName(b, j) ? (d < 0 ? -1 : 1) : undefined;
      }
      continue;
    }
    if (wx !== wy) return simpleName(a, i) && simpleName(b, j) ? (wx < wy ? -1 : 1) : undefined;
    i++;
    j++;
  }
  if (!simpleName(a, i) || !simpleName(b, j)) return undefined;
  // one name is the start of the other: the shorter comes first
  return i < a.length ? 1 : j < b.length ? -1 : 0;
}

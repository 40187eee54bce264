// The one natural order of names, for the facts (interfaces, RDMA devices) and for the
// planner and scheduler (nodes, NICs): eth2 < eth10, mlx5_2 < mlx5_10, node2 < node10, as
// ICU's collation for 'en' with numeric ordering has it. One function, so that a device
// list read on a node and the same list ordered by the planner can never disagree.
// Creating that Intl.Collator loads ICU's collation data, a visible part of a short command
// such as `rankd facts`, and each comparison through it is slow next to a plain one; names
// made of lowercase letters, digits and _ - . (nearly every interface, device and node
// name) are ordered here the same way without it, and any other name is left to the
// collator, created on first need. test/facts/natural-order.test.ts holds the two to the
// same answers.

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
 * as numbers (node001 < node002 < node010, leading zeros read as the collator reads them);
 * undefined when either name has another character, or when the names differ only in the
 * zeros that pad a number (node1, node01: ICU's tie-breaking rules for those are its own).
 */
export function simpleOrder(a: string, b: string): -1 | 0 | 1 | undefined {
  let i = 0;
  let j = 0;
  let paddingDiffers = false;
  while (i < a.length && j < b.length) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(j);
    const wx = weight(x);
    const wy = weight(y);
    if (wx === undefined || wy === undefined) return undefined;
    if (wx === DIGIT && wy === DIGIT) {
      const endA = digitsEnd(a, i);
      const endB = digitsEnd(b, j);
      // the number's own digits, after the zeros that pad it
      const startA = zerosEnd(a, i, endA);
      const startB = zerosEnd(b, j, endB);
      if (startA - i !== startB - j) paddingDiffers = true;
      if (endA - startA !== endB - startB) {
        // the order is decided here, but only for names the collator would read the same way
        if (!simpleName(a, endA) || !simpleName(b, endB)) return undefined;
        return endA - startA < endB - startB ? -1 : 1;
      }
      for (let k = 0; k < endA - startA; k++) {
        const d = a.charCodeAt(startA + k) - b.charCodeAt(startB + k);
        if (d !== 0) return simpleName(a, startA + k) && simpleName(b, startB + k) ? (d < 0 ? -1 : 1) : undefined;
      }
      i = endA;
      j = endB;
      continue;
    }
    if (wx !== wy) return simpleName(a, i) && simpleName(b, j) ? (wx < wy ? -1 : 1) : undefined;
    i++;
    j++;
  }
  if (!simpleName(a, i) || !simpleName(b, j)) return undefined;
  // one name is the start of the other: the shorter comes first
  if (i < a.length) return 1;
  if (j < b.length) return -1;
  return paddingDiffers ? undefined : 0;
}

/** Where the zeros that pad the digit run [from, end) stop; a run of zeros alone is all padding. */
function zerosEnd(s: string, from: number, end: number): number {
  let k = from;
  while (k < end && s.charCodeAt(k) === 48) k++;
  return k;
}

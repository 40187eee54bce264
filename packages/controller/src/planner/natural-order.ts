// Node and device names sort the way people read them: node2 before node10, mlx5_2
// before mlx5_10. Hand-rolled because Intl.Collator costs about a microsecond per
// comparison, which adds up when sorting thousands of node names.

const isDigit = (c: number) => c >= 48 && c <= 57;

export function naturalCompare(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(j);
    if (isDigit(ca) && isDigit(cb)) {
      // compare digit runs by value: skip leading zeros, then length, then digits
      let si = i;
      let sj = j;
      while (si < a.length && a.charCodeAt(si) === 48) si++;
      while (sj < b.length && b.charCodeAt(sj) === 48) sj++;
      let ei = si;
      let ej = sj;
      while (ei < a.length && isDigit(a.charCodeAt(ei))) ei++;
      while (ej < b.length && isDigit(b.charCodeAt(ej))) ej++;
      if (ei - si !== ej - sj) return ei - si - (ej - sj);
      for (let k = 0; k < ei - si; k++) {
        const d = a.charCodeAt(si + k) - b.charCodeAt(sj + k);
        if (d !== 0) return d;
      }
      // equal values: fewer leading zeros first, then carry on after the runs
      if (si - i !== sj - j) return si - i - (sj - j);
      i = ei;
      j = ej;
    } else {
      if (ca !== cb) return ca - cb;
      i++;
      j++;
    }
  }
  return a.length - i - (b.length - j);
}

// `rankd run` prints each rank's lines as "RANK: text". These split such output back
// into each rank's lines, and keep the lines that carry no label apart.
export interface Labelled {
  byRank: Map<number, string[]>;
  unlabelled: string[];
}

export function splitLabelled(text: string): Labelled {
  const byRank = new Map<number, string[]>();
  const unlabelled: string[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const m = /^(\d+): (.*)$/.exec(line);
    if (!m) {
      unlabelled.push(line);
      continue;
    }
    const rank = Number(m[1]);
    byRank.set(rank, [...(byRank.get(rank) ?? []), m[2]!]);
  }
  return { byRank, unlabelled };
}

/** The lines of a stored log (text), without the empty one after the last newline. */
export function lines(text: string): string[] {
  const out = text.split('\n');
  if (out[out.length - 1] === '') out.pop();
  return out;
}

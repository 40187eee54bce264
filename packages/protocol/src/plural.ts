// Counted words for messages: "1 rank", "2 ranks", "1 has", "2 have". Schema-free, so that
// the CLI, the controller and the agent all say it the same way without loading TypeBox.

/** "1 rank", "0 ranks", "2 ranks"; pass the plural for irregular words ("1 NUMA node(s)" is never right). */
export function plural(n: number, word: string, words = `${word}s`): string {
  return `${n} ${n === 1 ? word : words}`;
}

/** The word alone, agreeing with n: `${n} ${agree(n, 'has', 'have')} room`. */
export function agree(n: number, one: string, many: string): string {
  return n === 1 ? one : many;
}

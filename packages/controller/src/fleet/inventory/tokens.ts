// Splits an inventory line into words the way Python's shlex does for Ansible: blanks
// separate, quotes group, backslash escapes, and `#` at the start of a word begins a
// comment. Quotes are removed, so `k="a b"` is the word `k=a b`.
export function splitWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quote) {
      if (ch === quote) quote = null;
      else if (ch === '\\' && quote === '"' && i + 1 < line.length && '"\\$`'.includes(line[i + 1]!)) word += line[++i];
      else word += ch;
      continue;
    }
    if (ch === ' ' || ch === '\t') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      continue;
    }
    if (ch === '#' && !inWord) break;
    inWord = true;
    if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '\\' && i + 1 < line.length) word += line[++i];
    else word += ch;
  }
  if (quote) throw new Error(`no closing quotation (${quote})`);
  if (inWord) words.push(word);
  return words;
}

/** `key=value` → [key, value]; null when the word has no "=" or an empty key. */
export function splitAssignment(word: string): [string, string] | null {
  const eq = word.indexOf('=');
  if (eq <= 0) return null;
  return [word.slice(0, eq).trim(), word.slice(eq + 1).trim()];
}

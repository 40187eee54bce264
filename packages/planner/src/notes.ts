// The map's notes: choices worth showing. The same note on many nodes of a large,
// uniform cluster is said once with the nodes listed, and the list is capped.
const MAX_NOTES = 64;
const MAX_NODES_SHOWN = 4;

export class NoteBook {
  private readonly byText = new Map<string, string[]>();

  add(node: string | null, text: string): void {
    let nodes = this.byText.get(text);
    if (!nodes) this.byText.set(text, (nodes = []));
    if (node !== null) nodes.push(node);
  }

  list(): string[] {
    const out: string[] = [];
    for (const [text, nodes] of this.byText) {
      if (out.length === MAX_NOTES) {
        out.push(`… and ${this.byText.size - MAX_NOTES} more notes`);
        break;
      }
      if (nodes.length === 0) out.push(text);
      else {
        const shown = nodes.slice(0, MAX_NODES_SHOWN).join(',');
        const more = nodes.length > MAX_NODES_SHOWN ? ` (+${nodes.length - MAX_NODES_SHOWN} more)` : '';
        out.push(`node ${shown}${more}: ${text}`);
      }
    }
    return out;
  }
}

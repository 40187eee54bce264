// The controller's folders form a DAG: no folder imports, even for types only, from a folder
// that imports it back, however long the way round. ESLint's import-x/no-cycle works on
// modules and skips type-only imports, so it cannot hold this; this test reads every import
// of packages/controller/src and does.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../packages/controller/src');

type Edges = Map<string, Set<string>>;

function folderOf(relative: string): string {
  return relative.includes('/') ? relative.slice(0, relative.indexOf('/')) : '(root)';
}

/** Folder → folders it imports from (relative imports only: other packages are not folders). */
function folderEdges(): Edges {
  const edges: Edges = new Map();
  for (const file of readdirSync(SRC, { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.ts')) continue;
    const from = folderOf(file);
    for (const [, spec] of readFileSync(path.join(SRC, file), 'utf8').matchAll(/from '(\.[^']+)'/g)) {
      const to = folderOf(path.relative(SRC, path.resolve(SRC, path.dirname(file), spec!)));
      if (to === from) continue;
      if (!edges.has(from)) edges.set(from, new Set());
      edges.get(from)!.add(to);
    }
  }
  return edges;
}

/** Every cycle a depth-first walk meets, as the folders along it (first folder repeated last). */
function cycles(edges: Edges): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (folder: string): void => {
    state.set(folder, 'open');
    stack.push(folder);
    for (const next of edges.get(folder) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(folder, 'done');
  };
  for (const folder of [...edges.keys()].sort()) if (!state.has(folder)) visit(folder);
  return found;
}

t.test('the walk finds a cycle where there is one, of any length', async (t) => {
  const edges: Edges = new Map([
    ['jobs', new Set(['store'])],
    ['store', new Set(['gateway'])],
    ['gateway', new Set(['jobs'])],
  ]);
  t.same(cycles(edges), [['gateway', 'jobs', 'store', 'gateway']]);
  t.same(cycles(new Map([['api', new Set(['jobs'])]])), []);
});

t.test("the controller's folders import each other without a cycle, type-only imports included", async (t) => {
  const edges = folderEdges();
  t.ok(edges.get('api')?.has('jobs'), 'the scan reads the imports (api uses jobs)');
  t.same(
    cycles(edges).map((c) => c.join(' -> ')),
    [],
    'break a cycle with an interface in the lower folder, or by moving the shared piece down',
  );
});

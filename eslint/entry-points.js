// ESLint rule `rankd/entry-points`: an import of a workspace package (`@rankd/NAME` or
// `@rankd/NAME/SUB`) must name one of the entry points that package's package.json `exports`
// lists by name. The list is read from the package.json files at lint time, so the rule follows
// the packages as they are cut, with no copy of it here to keep in step.
//
// A pattern key (`"./*"`) names no entry point: it opens every module of the package, which is
// what sealing a package takes away. A package without `exports` has only its main entry.
import { readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** name → { dir, entries: Set of '.', './sub' } for every workspace of the root package.json. */
export function readWorkspaces(root = ROOT) {
  const workspaces = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces ?? [];
  const packages = new Map();
  for (const dir of workspaces) {
    const manifest = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'));
    packages.set(manifest.name, { dir: join(root, dir), entries: entryPoints(manifest.exports) });
  }
  return packages;
}

/** The subpaths `exports` names one by one ('.', './sub'), without patterns or null targets. */
export function entryPoints(exports) {
  if (exports === undefined) return new Set(['.']);
  if (typeof exports === 'string' || Array.isArray(exports)) return new Set(['.']);
  const keys = Object.keys(exports);
  // an object of conditions only ({ import, types, default }) is the main entry
  if (!keys.some((key) => key.startsWith('.'))) return new Set(['.']);
  return new Set(keys.filter((key) => !key.includes('*') && exports[key] !== null));
}

/** Splits `@rankd/controller/planner/index` into the package and './planner/index'. */
function targetOf(specifier, packages) {
  for (const [name, pkg] of packages) {
    if (specifier === name) return { name, pkg, subpath: '.' };
    if (specifier.startsWith(`${name}/`)) return { name, pkg, subpath: `.${specifier.slice(name.length)}` };
  }
  return null;
}

function describe(entries) {
  return entries.size === 0 ? 'none' : [...entries].map((entry) => `'${entry}'`).join(', ');
}

export const entryPointsRule = {
  meta: {
    type: 'problem',
    docs: { description: 'imports of a workspace package name only the entry points its package.json exports' },
    schema: [],
    messages: {
      notAnEntry:
        "'{{specifier}}' is not an entry point of {{name}}: its package.json exports {{entries}}. " +
        'Import one of those, or, from a test, bench or script, use #{{short}}/… (docs/packages.md).',
    },
  },
  create(context) {
    const packages = readWorkspaces();
    const filename = context.physicalFilename;

    function check(node, source) {
      if (!source || typeof source.value !== 'string') return;
      const target = targetOf(source.value, packages);
      if (!target) return;
      // a package may name its own subpaths however its exports allow; the rule is about others
      if (!relative(target.pkg.dir, filename).startsWith(`..${sep}`)) return;
      if (target.pkg.entries.has(target.subpath)) return;
      context.report({
        node: source,
        messageId: 'notAnEntry',
        data: {
          specifier: source.value,
          name: target.name,
          entries: describe(target.pkg.entries),
          short: target.name.replace(/^@rankd\//, ''),
        },
      });
    }

    return {
      ImportDeclaration: (node) => check(node, node.source),
      ExportNamedDeclaration: (node) => check(node, node.source),
      ExportAllDeclaration: (node) => check(node, node.source),
      ImportExpression: (node) => check(node, node.source),
      // `import('x').Type` in a type position
      TSImportType: (node) => check(node, node.source ?? node.argument?.literal),
      // `import x = require('x')`
      TSExternalModuleReference: (node) => check(node, node.expression),
    };
  },
};

export default { rules: { 'entry-points': entryPointsRule } };

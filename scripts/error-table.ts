// The table of error codes in docs/errors.md, generated from the registry
// (packages/protocol/src/errors.ts) so that the two cannot drift: `npm run errors-doc`
// rewrites it, and test/protocol/error-registry.test.ts fails while the file differs.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ERROR_SECTIONS, type ErrorDefinition } from '@rankd/protocol';

export const ERRORS_DOC = fileURLToPath(new URL('../docs/errors.md', import.meta.url));
const BEGIN = '<!-- BEGIN error table: generated from packages/protocol/src/errors.ts by `npm run errors-doc` -->';
const END = '<!-- END error table -->';

function row(e: ErrorDefinition): string {
  return `| \`${e.code}\` | ${e.status ?? '—'} | ${e.doc.replaceAll('|', '\\|')} |`;
}

/** The generated part of docs/errors.md: one table per section of the registry. */
export function renderErrorTable(): string {
  const parts = ERROR_SECTIONS.map((s) =>
    [`### ${s.title}`, '', '| Code | HTTP | Meaning |', '| --- | --- | --- |', ...s.errors.map(row)].join('\n'),
  );
  return [BEGIN, ...parts, END].join('\n\n');
}

/** The document with its table replaced by the registry's; refuses a document without the markers. */
export function withErrorTable(doc: string): string {
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${ERRORS_DOC} has no "${BEGIN}" … "${END}" block`);
  return doc.slice(0, begin) + renderErrorTable() + doc.slice(end + END.length);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const doc = readFileSync(ERRORS_DOC, 'utf8');
  const next = withErrorTable(doc);
  if (next === doc) process.stdout.write(`${ERRORS_DOC} is current\n`);
  else {
    writeFileSync(ERRORS_DOC, next);
    process.stdout.write(`rewrote the error table in ${ERRORS_DOC}\n`);
  }
}

// Writes the CLI's response checks (packages/cli/dist/client/response-checks/): per REST
// route of the table (@rankd/protocol/routes), one module with a check of each JSON answer
// it declares, compiled by TypeBox from the route's own schema, ahead of time.
//
// Ahead of time, because loading TypeBox costs a command ~200 ms of start-up
// (test/cli/loaded-modules.test.ts): the CLI imports the one module of the route it calls,
// which is plain code with no import. TypeBox's standalone code (typebox/compile's Code)
// imports two of its helpers; the one these schemas use, Guard.CodePointCount, is written
// out below, and any other the build refuses, as it refuses any external value but a
// RegExp, rather than writing a check that cannot run.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Code } from 'typebox/compile';
import { ROUTES } from '@rankd/protocol/routes';
import { routeFileName } from '@rankd/protocol/route-id';
import { root } from './lib/node-bundle.mjs';

const outdir = path.join(root, 'packages/cli/dist/client/response-checks');

/** TypeBox's own count (guard/unicode): UTF-16 units, a surrogate pair counted once. */
const CODE_POINT_COUNT = `function CodePointCount(value) {
  let result = 0, index = 0, prev = 0;
  while (index < value.length) {
    const next = value.charCodeAt(index++) >> 0xA;
    result += +(((prev << 8) | next) !== 0x3637);
    prev = next;
  }
  return result;
}`;

const IMPORTS = new Set(['import { Hashing } from "typebox/system"', 'import { Guard } from "typebox/guard"']);

/** The standalone check of one schema, as an expression: a function of the value. */
function checkExpression(where, schema) {
  const { Code: code, External: external } = Code(schema);
  const helpers = new Set(code.match(/\b(?:Guard|Hashing|CheckContext)\.\w+|\bCheckContext\b/g) ?? []);
  for (const helper of helpers) {
    if (helper !== 'Guard.CodePointCount') {
      throw new Error(`${where}: TypeBox's check uses ${helper}, which this script does not provide`);
    }
  }
  const values = external.variables.map((value, i) => {
    if (!(value instanceof RegExp)) {
      throw new Error(`${where}: TypeBox's check needs an external value that is not a RegExp (#${i})`);
    }
    return `new RegExp(${JSON.stringify(value.source)}, ${JSON.stringify(value.flags)})`;
  });
  const body = code
    .split('\n')
    .filter((line) => line !== '' && line !== '// @ts-ignore' && !IMPORTS.has(line))
    .filter((line) => !line.startsWith('export function SetExternal') && line !== 'let External = []')
    .map((line) => line.replace(/^export function Check\(/, 'return function Check('))
    .join('\n');
  return `(() => {\nconst External = [${values.join(', ')}];\n${body}\n})()`;
}

const isSchema = (value) => typeof value === 'object' && value !== null && '~kind' in value;

rmSync(outdir, { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });
let files = 0;
for (const [id, spec] of Object.entries(ROUTES)) {
  if (spec.upgrade) continue;
  const checks = Object.entries(spec.schema?.response ?? {})
    // JSON answers only: 204 has no body, and a stream's response object is not a schema
    .filter(([status, schema]) => /^2\d\d$/.test(status) && status !== '204' && isSchema(schema))
    .map(([status, schema]) => `  ${status}: ${checkExpression(`${id} ${status}`, schema)},`);
  const text = [
    `// ${id}: its answers' checks, written by scripts/cli-response-checks.mjs from the route table. Do not edit.`,
    `const Guard = { CodePointCount: ${CODE_POINT_COUNT} };`,
    `export const checks = {\n${checks.join('\n')}\n};`,
    '',
  ].join('\n');
  writeFileSync(path.join(outdir, `${routeFileName(id)}.js`), text);
  files++;
}
process.stdout.write(`cli-response-checks: ${files} routes in ${path.relative(root, outdir)}\n`);

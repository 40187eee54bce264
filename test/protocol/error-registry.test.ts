// The one error registry (packages/protocol/src/errors.ts) holds every RANKD_* code the
// sources use, in TypeScript and in the C supervisor, and every code the docs name; and
// docs/errors.md's table is the registry's.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { ERROR_SECTIONS, ErrorCode, PlanErrorCode, RankErrorCode, errorDefinition } from '@rankd/protocol';
import { ERRORS_DOC, renderErrorTable, withErrorTable } from '../../scripts/error-table.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CODE = /RANKD_[A-Z0-9_]+/g;

/**
 * RANKD_* names that are not error codes: environment variables rankd reads or sets, and
 * the version constant. A new variable goes here; a new error code goes in the registry.
 */
const NOT_ERROR_CODES = new Set([
  'RANKD_ADDRESS',
  'RANKD_ATTEMPT',
  'RANKD_CA',
  'RANKD_CA_HASH',
  'RANKD_CONTROLLER',
  'RANKD_DEFAULT_CPUS_PER_RANK',
  'RANKD_DEV',
  'RANKD_FACTS_ROOT',
  'RANKD_JOIN_SECRET',
  'RANKD_HOME',
  'RANKD_JOB_ID',
  'RANKD_JOIN_TOKEN',
  'RANKD_LABELS',
  'RANKD_LAUNCHER',
  'RANKD_LISTEN',
  'RANKD_MAX_RESTARTS',
  'RANKD_NODE_NAME',
  'RANKD_OMPI_JOB_DIR',
  'RANKD_OMPI_SUPERVISOR',
  'RANKD_OMPI_SOCKET',
  'RANKD_PASS_FD',
  'RANKD_RECONNECT_MAX_MS',
  'RANKD_SPOOL_DIR',
  'RANKD_STATE_DIR',
  'RANKD_STDIN_FD',
  'RANKD_TOKEN',
  'RANKD_TOKEN_FILE',
  'RANKD_URL',
  'RANKD_VERSION',
]);

const registered = ERROR_SECTIONS.flatMap((s) => s.errors.map((e) => e.code));

/** Files under dir (recursively) whose names end in one of the extensions. */
function filesUnder(dir: string, extensions: string[]): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => extensions.some((ext) => f.endsWith(ext)))
    .map((f) => join(dir, f));
}

function packageSources(): string[] {
  const out: string[] = [];
  for (const pkg of readdirSync(join(ROOT, 'packages'))) {
    out.push(...filesUnder(join(ROOT, 'packages', pkg, 'src'), ['.ts', '.tsx', '.pl']));
  }
  return [...out, ...filesUnder(join(ROOT, 'packages/agent/native'), ['.c', '.h'])];
}

const docs = readdirSync(join(ROOT, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => join(ROOT, 'docs', f));

/** The codes named in the docs table of docs/errors.md. */
function documentedCodes(): Set<string> {
  const rows = readFileSync(ERRORS_DOC, 'utf8').matchAll(/^\| `(RANKD_[A-Z0-9_]+)` \|/gm);
  return new Set([...rows].map((m) => m[1]!));
}

interface Finding {
  where: string;
  name: string;
  problem: string;
}

/**
 * Every RANKD_* name in the text that is neither a registered code nor a known variable, or
 * is a code the docs table lacks. A name ending in `_` (`RANKD_RANK_*`) stands for a family
 * of codes, which must have a member.
 */
function check(where: string, text: string, table: Set<string>): Finding[] {
  const out: Finding[] = [];
  text.split('\n').forEach((line, i) => {
    for (const [name] of line.matchAll(CODE)) {
      const at = `${where}:${i + 1}`;
      if (NOT_ERROR_CODES.has(name)) continue;
      if (name.endsWith('_')) {
        const family = registered.some((c) => c.startsWith(name));
        if (!family) out.push({ where: at, name, problem: 'names no registered code' });
      } else if (!errorDefinition(name)) {
        out.push({ where: at, name, problem: 'is not in the registry (packages/protocol/src/errors.ts)' });
      } else if (!table.has(name)) {
        out.push({ where: at, name, problem: 'is not in the docs table (npm run errors-doc)' });
      }
    }
  });
  return out;
}

function report(findings: Finding[]): string[] {
  return findings.map((f) => `${f.where}: ${f.name} ${f.problem}`);
}

t.test('every RANKD_* code in the sources is in the registry and the docs table', async (t) => {
  const table = documentedCodes();
  const files = packageSources();
  const findings = files.flatMap((f) => check(relative(ROOT, f), readFileSync(f, 'utf8'), table));
  t.same(report(findings), [], 'no unregistered or undocumented code');
  // the scan reads what it claims to: the C supervisor's codes and the TypeScript call sites
  const c = files
    .filter((f) => f.endsWith('.c'))
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
  t.match(c, RankErrorCode.SpawnFailed, 'the C sources were scanned');
  t.ok(
    files.some((f) => f.endsWith('/packages/controller/src/api/errors.ts')),
    'the controller sources were scanned',
  );
});

t.test('every RANKD_* code the docs name is registered', async (t) => {
  const table = documentedCodes();
  const findings = docs.flatMap((f) => check(relative(ROOT, f), readFileSync(f, 'utf8'), table));
  t.same(report(findings), [], 'no doc names a code rankd does not have');
});

t.test('the check names a code missing from the registry or the docs table', async (t) => {
  const table = documentedCodes();
  const source = `throw new RankdError('RANKD_NO_SUCH_CODE', 'x');\n// see RANKD_NOPE_* and RANKD_RANK_*`;
  t.same(
    check('a.ts', source, table).map((f) => `${f.where} ${f.name}`),
    ['a.ts:1 RANKD_NO_SUCH_CODE', 'a.ts:2 RANKD_NOPE_'],
    'the unknown code and the empty family, by file and line',
  );
  const lacking = new Set(table);
  lacking.delete(ErrorCode.BadFrame);
  t.same(report(check('b.c', `rs_fail("${ErrorCode.BadFrame}", "…");`, lacking)), [
    'b.c:1: RANKD_BAD_FRAME is not in the docs table (npm run errors-doc)',
  ]);
});

t.test('docs/errors.md has the table the registry generates', async (t) => {
  const doc = readFileSync(ERRORS_DOC, 'utf8');
  t.equal(doc, withErrorTable(doc), 'docs/errors.md is current: npm run errors-doc rewrites it');
  t.same([...documentedCodes()], registered, 'the table lists every code once, in registry order');
  t.ok(renderErrorTable().includes(`| \`${PlanErrorCode.TooManyRanks}\` | 400 |`), 'a row carries its code and status');
});

t.test('the registry: well-formed codes, each defined once, each with a doc', async (t) => {
  const all = ERROR_SECTIONS.flatMap((s) => s.errors);
  t.same(
    all.filter((e) => !/^RANKD_[A-Z0-9]+(_[A-Z0-9]+)*$/.test(e.code)).map((e) => e.code),
    [],
    'well-formed codes',
  );
  t.same(
    all.filter((e) => e.doc.trim() === '' || e.doc.includes('\n')).map((e) => e.code),
    [],
    'one-line docs',
  );
  t.equal(new Set(registered).size, registered.length, 'no code is defined twice');
  // the registry is what the REST error handler answers with: planner codes are requests' faults
  t.equal(errorDefinition(PlanErrorCode.NoCpus)?.status, 400);
  t.equal(errorDefinition(RankErrorCode.Pinning)?.status, null, 'rank start codes never reach HTTP');
});

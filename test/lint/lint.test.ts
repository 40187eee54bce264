// `npm run lint` inside `npm test`: ESLint over the whole tree finds no error and Prettier no
// file out of format. The probes show each boundary rule firing on code that breaks it and
// quiet on code that keeps it, so a config that stopped checking could not pass a clean tree.
import t from 'tap';
import { execFile } from 'node:child_process';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PRETTIER = fileURLToPath(new URL('../../node_modules/prettier/bin/prettier.cjs', import.meta.url));

/** `file:line rule message` for every error, as `npm run lint` prints them. */
function errorsOf(results: ESLint.LintResult[]): string[] {
  return results.flatMap((result) =>
    result.messages
      .filter((m) => m.severity === 2)
      .map((m) => `${relative(ROOT, result.filePath)}:${m.line} ${m.ruleId ?? '(parse)'} ${m.message}`),
  );
}

function rulesOf(results: ESLint.LintResult[]): string[] {
  return results.flatMap((result) => result.messages.filter((m) => m.severity === 2).map((m) => m.ruleId ?? '(parse)'));
}

t.test('ESLint over the tree: no error', async (t) => {
  const results = await new ESLint({ cwd: ROOT }).lintFiles(['.']);
  // every package, the tests, benches and scripts: a lint that found no files would pass too
  t.ok(results.length > 500, `${results.length} files linted`);
  for (const dir of ['packages/protocol/src', 'packages/controller/src', 'packages/cli/src', 'test', 'bench']) {
    t.ok(
      results.some((r) => relative(ROOT, r.filePath).startsWith(`${dir}/`)),
      `${dir} is linted`,
    );
  }
  const errors = errorsOf(results);
  t.same(errors, [], `${errors.length} errors`);
});

t.test('Prettier: every file in format', async (t) => {
  const run = promisify(execFile);
  const listed = await run(process.execPath, [PRETTIER, '--list-different', '.'], {
    cwd: ROOT,
    timeout: 180_000,
    maxBuffer: 16 * 1024 * 1024,
  }).then(
    ({ stdout }) => stdout,
    (err: { stdout?: string; code?: number }) => {
      // exit 1 lists the files out of format; anything else is Prettier failing
      if (err.code !== 1 || err.stdout === undefined) throw err;
      return err.stdout;
    },
  );
  const files = listed.split('\n').filter(Boolean);
  t.same(files, [], `${files.length} files out of format (npm run format writes them)`);
});

t.test('the boundary rules fire', async (t) => {
  // types are not needed by these rules, and probe text is in no tsconfig
  const eslint = new ESLint({ cwd: ROOT, overrideConfig: tseslint.configs.disableTypeChecked });
  const lint = async (path: string, code: string) =>
    rulesOf(await eslint.lintText(code, { filePath: `${ROOT}${path}` }));

  t.test('a workspace package is imported only through the entry points it exports', async (t) => {
    const deep = await lint('test/lint/probe.ts', "export { JobManager } from '@rankd/controller/jobs/job-manager';\n");
    t.same(deep, ['rankd/entry-points'], 'a module inside another package is refused');
    const entry = await lint('test/lint/probe.ts', "export { startController } from '@rankd/controller';\n");
    t.same(entry, [], "the package's main entry is not");
    const own = await lint('packages/controller/src/probe.ts', "export { JobManager } from './jobs/job-manager.js';\n");
    t.same(own, [], 'a package reaches its own modules by relative path');
    const dynamic = await lint('test/lint/probe.ts', "export const m = await import('@rankd/agent/link/enroll');\n");
    t.same(dynamic, ['rankd/entry-points'], 'import() is held to the same entry points');
  });

  t.test('the CLI loads a daemon only by import() in the command that runs it', async (t) => {
    const daemon = "export const { startController } = await import('@rankd/controller');\n";
    const staticImport = "export { startController } from '@rankd/controller';\n";
    const typeImport = "export type { ControllerOptions } from '@rankd/controller';\n";
    const jobs = 'packages/cli/src/commands/jobs.ts';
    const controller = 'packages/cli/src/commands/controller.ts';
    t.same(await lint(jobs, daemon), ['no-restricted-syntax'], 'import() from another command is refused');
    t.same(await lint(jobs, staticImport), ['@typescript-eslint/no-restricted-imports'], 'a static import is refused');
    t.same(await lint(jobs, typeImport), ['@typescript-eslint/no-restricted-imports'], 'so is a type import');
    t.same(await lint(controller, daemon), [], '`rankd controller` may import() it');
    t.same(await lint(controller, typeImport), [], 'and name its types');
    t.same(
      await lint(controller, staticImport),
      ['@typescript-eslint/no-restricted-imports'],
      'but not load it at start',
    );
  });

  t.test('a package imports only what its package.json declares', async (t) => {
    const undeclared = await lint('packages/protocol/src/probe.ts', "export { default } from 'fastify';\n");
    t.same(undeclared, ['import-x/no-extraneous-dependencies'], "fastify is the controller's, not the protocol's");
    const typeOnly = await lint('packages/protocol/src/probe.ts', "export type { Logger } from 'pino';\n");
    t.same(typeOnly, ['import-x/no-extraneous-dependencies'], 'a type import counts: .d.ts files name it');
    const declared = await lint('packages/protocol/src/probe.ts', "export { Type } from 'typebox';\n");
    t.same(declared, [], 'typebox is declared');
  });

  t.test('no import cycle', async (t) => {
    const dir = t.testdir({
      'a.ts': "import { b } from './b.js';\nexport const a = (): number => b() + 1;\n",
      'b.ts': "import { a } from './a.js';\nexport const b = (): number => a() - 1;\n",
      'c.ts': "import { a } from './a.js';\nexport const c = (): number => a();\n",
    });
    // the fixture directory is under .tap/, which the tree's lint ignores
    const probe = new ESLint({ cwd: ROOT, ignore: false, overrideConfig: tseslint.configs.disableTypeChecked });
    const results = await probe.lintFiles([dir]);
    const cycles = Object.fromEntries(
      results.map((r) => [relative(dir, r.filePath), rulesOf([r]).filter((rule) => rule === 'import-x/no-cycle')]),
    );
    t.same(
      cycles,
      { 'a.ts': ['import-x/no-cycle'], 'b.ts': ['import-x/no-cycle'], 'c.ts': [] },
      'a and b import each other; c only imports a',
    );
  });
});

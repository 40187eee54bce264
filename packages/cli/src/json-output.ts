// `--json` on every command that prints data: the document the REST route answered for the
// same question, whole (lists in their envelope, `{ jobs: [...] }`), never a part of it.
export function printJson(document: unknown): void {
  process.stdout.write(JSON.stringify(document, null, 2) + '\n');
}

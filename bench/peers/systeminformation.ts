// systeminformation's getStaticData() in a fresh Node process: what a Node agent built on
// that library pays to describe its host. A devDependency of the repository root, for this
// figure alone: rankd itself does not use it.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export function systeminformationEntry(repoRoot: string): string | null {
  try {
    const require = createRequire(path.join(repoRoot, 'package.json'));
    return require.resolve('systeminformation');
  } catch {
    return null;
  }
}

export function systeminformationVersion(repoRoot: string): string | null {
  try {
    const require = createRequire(path.join(repoRoot, 'package.json'));
    return (require('systeminformation/package.json') as { version: string }).version;
  } catch {
    return null;
  }
}

export function getStaticDataArgv(entry: string): string[] {
  const script = [
    `const si = (await import(${JSON.stringify(pathToFileURL(entry).href)})).default;`,
    'const data = await si.getStaticData();',
    'process.stdout.write(JSON.stringify(data));',
  ].join('\n');
  return [process.execPath, '--input-type=module', '-e', script];
}

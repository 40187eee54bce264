// Loader hooks of register.mjs: records each module as it is loaded.
import { appendFileSync } from 'node:fs';

let file;

export function initialize(data) {
  file = data.file;
}

export async function load(url, context, nextLoad) {
  if (file) appendFileSync(file, url + '\n');
  return nextLoad(url, context);
}

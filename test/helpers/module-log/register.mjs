// `node --import` this file to have every module the process loads appended, one URL a
// line, to the file named by $RANKD_MODULE_LOG: how the tests check that a command
// loads only what it uses. The hooks run on the loader's own thread (module.register).
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url, { data: { file: process.env.RANKD_MODULE_LOG } });

// "--listen" values: "127.0.0.1:7480", "[::1]:7480", ":7480", "0.0.0.0", "7480".
import { CliError, ExitCode } from './exit-codes.js';

export function parseListen(value: string, defaultPort: number): { host: string; port: number } {
  const v = value.trim();
  let host = '127.0.0.1';
  let portText: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(v);
  if (bracketed) {
    host = bracketed[1]!;
    portText = bracketed[2];
  } else if (/^\d+$/.test(v)) {
    portText = v;
  } else {
    const colon = v.lastIndexOf(':');
    if (colon >= 0 && v.indexOf(':') === colon) {
      host = v.slice(0, colon) || '127.0.0.1';
      portText = v.slice(colon + 1);
    } else {
      host = v;
    }
  }
  const port = portText === undefined || portText === '' ? defaultPort : Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new CliError(`--listen ${value}: bad port`, ExitCode.Usage);
  return { host, port };
}

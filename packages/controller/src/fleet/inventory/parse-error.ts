// Inventory errors name the file and the line, as compilers do: "hosts.ini:7: …".
import { FleetErrorCode, RankdError } from '@rankd/protocol';

/** `line` is null for errors about the file as a whole (a cycle of child groups). */
export function parseError(source: string, line: number | null, message: string): RankdError {
  return new RankdError(FleetErrorCode.InventoryParse, `${source}${line === null ? '' : `:${line}`}: ${message}`, {
    source,
    line,
  });
}

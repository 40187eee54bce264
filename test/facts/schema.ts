// Facts must validate against the published schema: the controller refuses them otherwise.
import { Compile } from 'typebox/compile';
import { Facts } from '@rankd/protocol';

const validator = Compile(Facts);

/** The schema errors of a facts object, empty when it is valid. */
export function schemaErrors(facts: unknown): string[] {
  if (validator.Check(facts)) return [];
  return [...validator.Errors(facts)]
    .slice(0, 5)
    .map((e) => `${(e as { instancePath?: string }).instancePath ?? ''} ${e.message}`);
}

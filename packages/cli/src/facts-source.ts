// The agent's facts come from the sysfs reader under a root directory.
import type { FactsSource } from '@rankd/agent';
import { factsHash, readFacts } from '@rankd/agent/facts/index';

export function factsSource(root: string): FactsSource {
  return { read: () => readFacts({ root }), hash: factsHash };
}

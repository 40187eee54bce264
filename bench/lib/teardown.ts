// Everything a run starts is registered here and undone in reverse order: at the end of a
// figure, and on Ctrl-C or SIGTERM, so an interrupted bench leaves no Slurm behind.
type Undo = () => Promise<void> | void;

const stack: Array<{ what: string; undo: Undo }> = [];

export interface Untrack {
  /** Runs the undo now (once) and forgets it. */
  (): Promise<void>;
  /** Forgets the undo without running it: the thing already ended by itself. */
  forget(): void;
}

export function onTeardown(what: string, undo: Undo): Untrack {
  const entry = { what, undo };
  stack.push(entry);
  const remove = () => {
    const i = stack.indexOf(entry);
    if (i === -1) return false;
    stack.splice(i, 1);
    return true;
  };
  const untrack = (async () => {
    if (remove()) await undo();
  }) as Untrack;
  untrack.forget = () => void remove();
  return untrack;
}

export async function teardownAll(log: (m: string) => void = () => {}): Promise<void> {
  while (stack.length > 0) {
    const { what, undo } = stack.pop()!;
    try {
      await undo();
    } catch (err) {
      log(`teardown of ${what} failed: ${(err as Error).message}`);
    }
  }
}

let installed = false;

/** On SIGINT/SIGTERM: undo everything, then exit with the conventional 128+signal code. */
export function teardownOnSignals(log: (m: string) => void): void {
  if (installed) return;
  installed = true;
  for (const [sig, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.once(sig, () => {
      log(`${sig}: stopping what this run started`);
      void teardownAll(log).finally(() => process.exit(code));
    });
  }
}

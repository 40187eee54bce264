// Shell workloads whose every line is predictable, so a test can tell a lost, repeated
// or reordered line from a good one: rank R prints "R out I" for I = 1…N on stdout and
// "R err I" for every tenth I on stderr.
export interface CountingOptions {
  lines: number;
  /** Pause `pauseS` seconds after every `pauseEvery` lines, so the job lasts a while. */
  pauseEvery?: number;
  pauseS?: number;
  /**
   * Print the first `gateAt` lines, then wait until the file `<gateDir>/<RANK>` exists
   * before printing the rest: the test decides when each rank goes on.
   */
  gate?: { dir: string; at: number };
  /** Exit codes by rank (default 0). */
  exitCodes?: Record<number, number>;
}

/** The argv of the workload (sh -c …); the shell reads RANK from the planner's environment. */
export function countingWorkload(o: CountingOptions): string[] {
  const pause = o.pauseEvery ? `[ $((i % ${o.pauseEvery})) = 0 ] && sleep ${o.pauseS ?? 0.1}; ` : '';
  const line = `echo "$RANK out $i"; [ $((i % 10)) = 0 ] && echo "$RANK err $i" >&2; ${pause}`;
  const exits = Object.entries(o.exitCodes ?? {})
    .map(([rank, code]) => `[ "$RANK" = ${Number(rank)} ] && exit ${Number(code)}; `)
    .join('');
  const body = o.gate
    ? `i=1; while [ $i -le ${o.gate.at} ]; do ${line}i=$((i + 1)); done; ` +
      `while [ ! -e '${o.gate.dir}'/"$RANK" ]; do sleep 0.05; done; ` +
      `while [ $i -le ${o.lines} ]; do ${line}i=$((i + 1)); done; `
    : `i=1; while [ $i -le ${o.lines} ]; do ${line}i=$((i + 1)); done; `;
  return ['sh', '-c', `${body}${exits}exit 0`];
}

export function expectedStdout(rank: number, lines: number): string {
  let s = '';
  for (let i = 1; i <= lines; i++) s += `${rank} out ${i}\n`;
  return s;
}

export function expectedStderr(rank: number, lines: number): string {
  let s = '';
  for (let i = 10; i <= lines; i += 10) s += `${rank} err ${i}\n`;
  return s;
}

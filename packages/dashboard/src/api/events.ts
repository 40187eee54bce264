// One EventSource on GET /v1/events for the whole page. Views subscribe to the names they
// show and read the new state through the API. After a reconnect every subscriber hears a
// `resync`: events sent while the link was down are lost, so each view reads again.
export type Change =
  { kind: 'node'; name: string } | { kind: 'job'; id: string } | { kind: 'check'; id: string } | { kind: 'resync' };
type Listener = (change: Change) => void;

const listeners = new Set<Listener>();
let source: EventSource | null = null;
let opened = false;

function connect(): void {
  source = new EventSource('/v1/events');
  source.addEventListener('node', (e) =>
    emit({ kind: 'node', name: JSON.parse((e as MessageEvent<string>).data).name }),
  );
  source.addEventListener('job', (e) => emit({ kind: 'job', id: JSON.parse((e as MessageEvent<string>).data).id }));
  source.addEventListener('check', (e) => emit({ kind: 'check', id: JSON.parse((e as MessageEvent<string>).data).id }));
  source.addEventListener('open', () => {
    if (opened) emit({ kind: 'resync' });
    opened = true;
  });
}

function emit(change: Change): void {
  for (const l of listeners) l(change);
}

export function onChange(listener: Listener): () => void {
  if (!source) connect();
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function closeEvents(): void {
  source?.close();
  source = null;
  opened = false;
}

// A minimal Server-Sent Events reader over a response body: the fields rankd sends
// (id, event, data), one event per blank line.
export interface SseEvent {
  id: string | null;
  event: string;
  data: string;
}

export async function* readSse(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let id: string | null = null;
  let event = 'message';
  let data: string[] = [];
  for await (const bytes of body) {
    buffer += decoder.decode(bytes, { stream: true });
    let start = 0;
    let nl: number;
    // index walking, not re-slicing the buffer per line: a chunk holds thousands of lines
    while ((nl = buffer.indexOf('\n', start)) >= 0) {
      let line = buffer.slice(start, nl);
      start = nl + 1;
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (data.length > 0) yield { id, event, data: data.length === 1 ? data[0]! : data.join('\n') };
        event = 'message';
        data = [];
        continue;
      }
      if (line.charCodeAt(0) === 58 /* ':' */) continue; // keepalive comment
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(line.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1);
      if (field === 'id') id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    buffer = buffer.slice(start);
  }
}

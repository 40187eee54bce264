// A job's output, live: all ranks or one, stdout and stderr, labelled lines, follow and pause,
// search and download. Only the rows in sight are in the DOM (the list is virtual), and
// incoming records re-render at most once per animation frame, so the page keeps up with a
// job printing tens of thousands of lines a second.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { LogBuffer, label, type LogLine } from './log-buffer';
import { rankColour } from '../topology/overlay';

const ROW_PX = 18;
const OVERSCAN = 20;

export function LogView({ jobId, worldSize }: { jobId: string; worldSize: number }) {
  const [rank, setRank] = useState('all');
  const [stream, setStream] = useState('all');
  const [follow, setFollow] = useState(true);
  const [search, setSearch] = useState('');
  const [status, setStatus] = useState('connecting');
  const [version, setVersion] = useState(0);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(400);
  const box = useRef<HTMLDivElement>(null);
  const buffer = useMemo(() => new LogBuffer(), [jobId, rank, stream]);

  useEffect(() => {
    const q = new URLSearchParams({ follow: 'true', format: 'sse' });
    if (rank !== 'all') q.set('rank', rank);
    if (stream !== 'all') q.set('stream', stream);
    const source = new EventSource(`/v1/jobs/${encodeURIComponent(jobId)}/logs?${q}`);
    let frame = 0;
    const repaint = () => {
      frame = 0;
      setVersion((v) => v + 1);
    };
    source.addEventListener('output', (e) => {
      const r = JSON.parse((e as MessageEvent<string>).data) as { rank: number; stream: string; data: string };
      buffer.append(r.rank, r.stream, r.data);
      if (!frame) frame = requestAnimationFrame(repaint);
    });
    source.addEventListener('queued', (e) =>
      setStatus(`queued: ${JSON.parse((e as MessageEvent<string>).data).reason}`),
    );
    source.addEventListener('started', () => setStatus('following'));
    source.addEventListener('open', () => setStatus((s) => (s.startsWith('queued') ? s : 'following')));
    source.addEventListener('end', () => {
      // the stream is complete: without close() the browser would reconnect and read it again
      source.close();
      buffer.flush();
      setStatus('ended');
      setVersion((v) => v + 1);
    });
    source.addEventListener('error', () => source.readyState !== EventSource.CLOSED && setStatus('reconnecting'));
    return () => {
      source.close();
      if (frame) cancelAnimationFrame(frame);
    };
  }, [jobId, rank, stream]);

  // search filters by index, extended as lines arrive rather than rescanned
  const matches = useRef<{ term: string; upTo: number; dropped: number; idx: number[] }>({
    term: '',
    upTo: 0,
    dropped: 0,
    idx: [],
  });
  const shown = useMemo((): { count: number; at: (i: number) => LogLine } => {
    const lines = buffer.lines;
    if (!search) return { count: lines.length, at: (i) => lines[i]! };
    const m = matches.current;
    if (m.term !== search || m.dropped !== buffer.dropped || m.upTo > lines.length)
      Object.assign(m, { term: search, upTo: 0, dropped: buffer.dropped, idx: [] });
    const needle = search.toLowerCase();
    for (let i = m.upTo; i < lines.length; i++) if (lines[i]!.text.toLowerCase().includes(needle)) m.idx.push(i);
    m.upTo = lines.length;
    return { count: m.idx.length, at: (i) => lines[m.idx[i]!]! };
  }, [version, search, buffer]);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const resize = new ResizeObserver(() => setHeight(el.clientHeight));
    resize.observe(el);
    return () => resize.disconnect();
  }, []);

  useEffect(() => {
    const el = box.current;
    if (follow && el) el.scrollTop = el.scrollHeight;
  }, [version, follow, shown.count]);

  const onScroll = (e: Event) => {
    const el = e.currentTarget as HTMLDivElement;
    setScrollTop(el.scrollTop);
    // scrolling up pauses, as in a terminal; the Follow button resumes
    if (follow && el.scrollTop + el.clientHeight < el.scrollHeight - ROW_PX * 2) setFollow(false);
  };

  const first = Math.max(0, Math.floor(scrollTop / ROW_PX) - OVERSCAN);
  const last = Math.min(shown.count, Math.ceil((scrollTop + height) / ROW_PX) + OVERSCAN);
  const rows = [];
  for (let i = first; i < last; i++) {
    const line = shown.at(i);
    rows.push(
      <div class={`log-line${line.err ? ' err' : ''}`} style={{ top: `${i * ROW_PX}px` }} key={i}>
        <span class="log-label" style={{ color: rankColour(line.rank) }}>
          {label(line)}
        </span>{' '}
        {line.text}
      </div>,
    );
  }

  const download = () => {
    const text: string[] = [];
    for (let i = 0; i < shown.count; i++) {
      const line = shown.at(i);
      text.push(`${label(line)} ${line.text}`);
    }
    const url = URL.createObjectURL(new Blob([text.join('\n') + '\n'], { type: 'text/plain' }));
    const a = Object.assign(document.createElement('a'), { href: url, download: `${jobId}.log` });
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  };

  return (
    <section class="logs" aria-label="Output">
      <div class="log-controls">
        <label>
          Rank{' '}
          <select value={rank} onChange={(e) => setRank(e.currentTarget.value)}>
            <option value="all">all</option>
            {Array.from({ length: worldSize }, (_, r) => (
              <option value={String(r)} key={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <label>
          Stream{' '}
          <select value={stream} onChange={(e) => setStream(e.currentTarget.value)}>
            <option value="all">stdout and stderr</option>
            <option value="stdout">stdout</option>
            <option value="stderr">stderr</option>
          </select>
        </label>
        <button type="button" aria-pressed={follow} onClick={() => setFollow(!follow)}>
          {follow ? 'Pause' : 'Follow'}
        </button>
        <label>
          Search <input type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
        </label>
        <button type="button" onClick={download}>
          Download
        </button>
        <span class="muted" role="status" data-testid="log-status">
          {shown.count.toLocaleString('en')} lines
          {buffer.dropped ? ` (${buffer.dropped.toLocaleString('en')} older dropped)` : ''} ·{' '}
          {follow || status !== 'following' ? status : 'paused'}
        </span>
      </div>
      <div class="log-box" ref={box} onScroll={onScroll} tabIndex={0} aria-label="Log lines" data-testid="log-box">
        <div class="log-rows" style={{ height: `${shown.count * ROW_PX}px` }}>
          {rows}
        </div>
      </div>
    </section>
  );
}

// The dashboard's entry: sign in (a login code in the URL's fragment, an existing session
// cookie, or the login form), then the page the hash names.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, must, useSessionCsrf, type SessionView } from './api/client';
import { closeEvents } from './api/events';
import { href, useRoute } from './router';
import { Fleet } from './pages/Fleet';
import { NodePage } from './pages/NodePage';
import { Jobs } from './pages/Jobs';
import { JobPage } from './pages/JobPage';
import { Network } from './pages/Network';
import { Login } from './pages/Login';
import './styles.css';

/** A login code in `#login=<code>` becomes a session; the code leaves the address bar and history at once. */
async function signIn(): Promise<SessionView> {
  const code = /^#login=([A-Za-z0-9_-]+)$/.exec(location.hash)?.[1];
  if (code) {
    history.replaceState(null, '', '/ui/#/');
    return must(api.POST('/v1/session', { body: { code } }));
  }
  return must(api.GET('/v1/session'));
}

function App() {
  const [session, setSession] = useState<SessionView | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [checked, setChecked] = useState(false);
  useEffect(() => {
    signIn()
      .then(
        (s) => setSession(s),
        (err: Error) =>
          setProblem(
            err instanceof ApiError && err.status === 401 && !err.message.includes('login code') ? null : err.message,
          ),
      )
      .finally(() => setChecked(true));
  }, []);
  useEffect(() => useSessionCsrf(session?.csrf ?? null), [session]);
  if (!checked) return <p class="boot">Loading rankd…</p>;
  if (!session) return <Login onSession={setSession} problem={problem} />;
  const signOut = async () => {
    await api.DELETE('/v1/session');
    closeEvents();
    setSession(null);
  };
  return <Shell session={session} onSignOut={signOut} />;
}

function Shell({ session, onSignOut }: { session: SessionView; onSignOut: () => void }) {
  const route = useRoute();
  const current =
    route.page === 'node' || route.page === 'fleet'
      ? 'fleet'
      : route.page === 'job' || route.page === 'jobs'
        ? 'jobs'
        : route.page;
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href.fleet()}>
          rankd
        </a>
        <nav aria-label="Main">
          <a href={href.fleet()} aria-current={current === 'fleet' ? 'page' : undefined}>
            Fleet
          </a>
          <a href={href.jobs()} aria-current={current === 'jobs' ? 'page' : undefined}>
            Jobs
          </a>
          <a href={href.network()} aria-current={current === 'network' ? 'page' : undefined}>
            Network
          </a>
        </nav>
        <span class="who">
          {session.user} ({session.role})
        </span>
        <button type="button" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {route.page === 'fleet' && <Fleet session={session} />}
        {route.page === 'node' && <NodePage name={route.name} key={route.name} />}
        {route.page === 'jobs' && <Jobs />}
        {route.page === 'job' && <JobPage id={route.id} session={session} key={route.id} />}
        {route.page === 'network' && <Network />}
        {route.page === 'missing' && <p role="alert">No page at {route.path}.</p>}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);

// Signing in: with the URL `rankd dashboard` prints (handled before this page shows), or
// with an API token pasted here. Either way the browser ends up with a session cookie and
// never keeps the token.
import { useState } from 'preact/hooks';
import { api, must, type SessionView } from '../api/client';

export function Login({ onSession, problem }: { onSession: (s: SessionView) => void; problem: string | null }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(problem);
  const submit = async (e: Event) => {
    e.preventDefault();
    try {
      onSession(await must(api.POST('/v1/session', { body: { token: token.trim() } })));
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <main id="main" class="login">
      <h1>Sign in to rankd</h1>
      <p>
        Run <code>rankd dashboard</code> and open the URL it prints (<code>--open</code> opens it for you), or paste an
        API token.
      </p>
      <form onSubmit={submit}>
        <label for="token">API token</label>
        <input
          id="token"
          type="password"
          autoComplete="off"
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
          required
        />
        <button type="submit">Sign in</button>
      </form>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </main>
  );
}

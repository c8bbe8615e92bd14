import { useState, type FormEvent } from "react";
import { useAuth } from "../auth/auth";

/** Paste an API key; it is kept in this browser's storage and sent only as a bearer header. */
export function SignIn() {
  const { signIn, error, signOut, key } = useAuth();
  const [value, setValue] = useState("");
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (value.trim()) signIn(value);
  };
  return (
    <main className="signin">
      <form onSubmit={submit} className="signin-card" aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in to Critic</h1>
        <p className="muted">
          Paste an API key. <code>make run</code> prints one (and a link that signs you in); <code>critic users create</code> issues more.
        </p>
        <label htmlFor="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={value}
          onChange={(e) => setValue(e.target.value)}
          autoFocus
        />
        {error && (
          <p role="alert" className="error">
            {error}{" "}
            {key && (
              <button type="button" className="link" onClick={signOut}>
                Forget it
              </button>
            )}
          </p>
        )}
        <button type="submit" className="primary" disabled={!value.trim()}>
          Sign in
        </button>
      </form>
    </main>
  );
}

import { useEffect, useState, type FormEvent } from "react";
import { api, type ApiError, type Schemas } from "../api/client";
import { useAuth } from "../auth/auth";

// One request per link, even when StrictMode runs the effect twice: a
// second accept would find the link spent.
const accepting = new Map<string, Promise<Schemas["AcceptedInvitation"]>>();

function accept(token: string) {
  let p = accepting.get(token);
  if (!p) {
    p = api<Schemas["AcceptedInvitation"]>("/invitations/accept", { method: "POST", json: { token } });
    accepting.set(token, p);
  }
  return p;
}

/**
 * Paste an API key; it is kept in this browser's storage and sent only as a
 * bearer header. With a one-time link's token (#invite=…) it first spends
 * the token for a key of the member's own, stored the same way.
 */
export function SignIn({ invite, onInviteDone }: { invite?: string | null; onInviteDone?: () => void }) {
  const { signIn, error, signOut, key } = useAuth();
  const [value, setValue] = useState("");
  const [inviteError, setInviteError] = useState<string | null>(null);
  useEffect(() => {
    if (!invite) return;
    let live = true;
    accept(invite).then(
      (r) => {
        if (!live) return;
        signIn(r.api_key);
        onInviteDone?.();
      },
      (e: ApiError) => {
        if (live) setInviteError(e.status === 410 ? e.message : `Could not sign in with this link: ${e.message}`);
      },
    );
    return () => {
      live = false;
    };
  }, [invite, signIn, onInviteDone]);
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
        {invite && !inviteError && (
          <p role="status" className="muted">
            Signing you in with your link…
          </p>
        )}
        {inviteError && (
          <p role="alert" className="error">
            {inviteError}{" "}
            {key && !error && (
              <button type="button" className="link" onClick={onInviteDone}>
                Continue with the key this browser has
              </button>
            )}
          </p>
        )}
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

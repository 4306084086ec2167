// Sign in, and the password change a session whose password an admin
// chose must make before anything else.
import { useState } from "preact/hooks";

import { api, type Principal } from "../api/client";
import { ErrorBox, Field, useTitle } from "../ui";

export function SignIn({ error, onSignedIn }: { error?: unknown; onSignedIn: (me: Principal) => void }) {
  useTitle("Sign in");
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [err, setErr] = useState<unknown>(error);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setErr(undefined);
    try {
      onSignedIn(await api<Principal>("POST", "/session", { name, password }));
    } catch (x) {
      setErr(x);
      setBusy(false);
    }
  };
  return (
    <main id="main" class="center">
      <form class="card narrow" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in to Ductus</h1>
        <Field label="Name" id="signin-name">
          <input id="signin-name" name="username" autocomplete="username" required value={name}
            onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Password" id="signin-password">
          <input id="signin-password" name="password" type="password" autocomplete="current-password" required
            value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </Field>
        <ErrorBox error={err} />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}

export function ChangePassword({ me, onChanged, onSignOut }: { me: Principal; onChanged: () => void; onSignOut: () => void }) {
  useTitle("Choose a new password");
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [again, setAgain] = useState("");
  const [err, setErr] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    if (next !== again) {
      setErr("The new passwords differ.");
      return;
    }
    setBusy(true);
    setErr(undefined);
    try {
      await api("POST", "/me/password", { current, new: next });
      onChanged();
    } catch (x) {
      setErr(x);
      setBusy(false);
    }
  };
  const signOut = async () => {
    await api("DELETE", "/session").catch(() => undefined);
    onSignOut();
  };
  return (
    <main id="main" class="center">
      <form class="card narrow" onSubmit={submit} aria-labelledby="pw-title">
        <h1 id="pw-title">Choose a new password</h1>
        <p>
          Hello {me.name}: an administrator set your password. Choose your own (10 to 256 characters, not your name)
          before going on.
        </p>
        <input type="text" name="username" autocomplete="username" value={me.name} hidden readOnly />
        <Field label="Current password" id="pw-current">
          <input id="pw-current" type="password" autocomplete="current-password" required value={current}
            onInput={(e) => setCurrent(e.currentTarget.value)} />
        </Field>
        <Field label="New password" id="pw-new">
          <input id="pw-new" type="password" autocomplete="new-password" required minLength={10} value={next}
            onInput={(e) => setNext(e.currentTarget.value)} />
        </Field>
        <Field label="New password again" id="pw-again">
          <input id="pw-again" type="password" autocomplete="new-password" required minLength={10} value={again}
            onInput={(e) => setAgain(e.currentTarget.value)} />
        </Field>
        <ErrorBox error={err} />
        <div class="row">
          <button type="submit" class="primary" disabled={busy}>
            Change password
          </button>
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </div>
      </form>
    </main>
  );
}

// The shell: who is signed in, the header and navigation, and the pages.
import { useEffect, useState } from "preact/hooks";

import { api, ApiError, atLeast, onAuthProblem, type Principal } from "./api/client";
import { Admin, Audit } from "./pages/admin";
import { InterfacePage } from "./pages/interface";
import { MessagePage } from "./pages/message";
import { MessagesPage } from "./pages/messages";
import { Overview } from "./pages/overview";
import { QuarantinePage } from "./pages/quarantine";
import { ChangePassword, SignIn } from "./pages/signin";
import { match, navigate, onLinkClick, useLocation } from "./router";
import { currentTheme, toggleTheme } from "./theme";
import { ErrorBox } from "./ui";

type Auth = { kind: "loading" } | { kind: "out"; error?: unknown } | { kind: "in"; me: Principal };

export function App() {
  const [auth, setAuth] = useState<Auth>({ kind: "loading" });
  const loc = useLocation();

  const loadMe = () =>
    api<Principal>("GET", "/me").then(
      (me) => setAuth({ kind: "in", me }),
      (e) => setAuth(e instanceof ApiError && e.status === 401 ? { kind: "out" } : { kind: "out", error: e }),
    );

  useEffect(() => {
    loadMe();
    return onAuthProblem((e) => {
      if (e.status === 401) setAuth({ kind: "out", error: "Your session ended: sign in again." });
      else loadMe();
    });
  }, []);

  useEffect(() => {
    document.addEventListener("click", onLinkClick);
    return () => document.removeEventListener("click", onLinkClick);
  }, []);

  if (auth.kind === "loading") {
    return (
      <main id="main" class="center">
        <p role="status">Loading…</p>
      </main>
    );
  }
  if (auth.kind === "out") {
    return <SignIn error={auth.error} onSignedIn={(me) => setAuth({ kind: "in", me })} />;
  }
  const me = auth.me;
  if (me.must_change_password) {
    return <ChangePassword me={me} onChanged={loadMe} onSignOut={() => setAuth({ kind: "out" })} />;
  }
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <Header me={me} path={loc.path} onSignOut={() => setAuth({ kind: "out" })} />
      <main id="main" tabIndex={-1}>
        <Route me={me} path={loc.path} params={loc.params} />
      </main>
    </>
  );
}

function Route({ me, path, params }: { me: Principal; path: string; params: URLSearchParams }) {
  let m: Record<string, string> | null;
  if (match("/", path)) return <Overview me={me} />;
  if ((m = match("/interfaces/:name", path))) return <InterfacePage me={me} name={m.name} />;
  if ((m = match("/interfaces/:name/messages", path))) return <MessagesPage name={m.name} params={params} />;
  if ((m = match("/messages/:id", path))) return <MessagePage me={me} id={m.id} />;
  if (match("/quarantine", path)) return <QuarantinePage me={me} params={params} />;
  if (match("/admin", path)) return <Admin me={me} />;
  if (match("/admin/audit", path)) return <Audit me={me} params={params} />;
  return (
    <section>
      <h1>Not found</h1>
      <p>
        There is no page at <code>{path}</code>. <a href="/">Go to the overview</a>.
      </p>
    </section>
  );
}

function Header({ me, path, onSignOut }: { me: Principal; path: string; onSignOut: () => void }) {
  const [theme, setTheme] = useState(currentTheme());
  const [error, setError] = useState<unknown>();
  const signOut = async () => {
    try {
      if (me.via === "session") await api("DELETE", "/session");
      navigate("/", true);
      onSignOut();
    } catch (e) {
      setError(e);
    }
  };
  const link = (href: string, label: string) => {
    const current = href === "/" ? path === "/" || path.startsWith("/interfaces/") : path.startsWith(href);
    return (
      <li>
        <a href={href} aria-current={current ? "page" : undefined}>
          {label}
        </a>
      </li>
    );
  };
  return (
    <header class="top">
      <a class="brand" href="/">
        Ductus
      </a>
      <nav aria-label="Main">
        <ul>
          {link("/", "Overview")}
          {link("/quarantine", "Quarantine")}
          {(atLeast(me.role, "admin") || me.permissions.includes("audit")) && link("/admin", "Admin")}
        </ul>
      </nav>
      <div class="who">
        <span class="me" data-testid="whoami">
          {me.name} <span class="muted">({me.role}
          {me.permissions.length ? ", " + me.permissions.join(", ") : ""})</span>
        </span>
        <button
          type="button"
          class="ghost"
          aria-label={`Switch to the ${theme === "dark" ? "light" : "dark"} theme`}
          onClick={() => setTheme(toggleTheme())}
        >
          {theme === "dark" ? "Light theme" : "Dark theme"}
        </button>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </div>
      <ErrorBox error={error} />
    </header>
  );
}

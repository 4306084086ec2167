// Admin: users and roles, API tokens (a new token's secret is shown once),
// and the audit log with filters.
import { useState } from "preact/hooks";

import {
  api, atLeast, enc, query,
  type AuditPage, type CreatedToken, type Permission, type Principal, type Role, type Token, type User,
} from "../api/client";
import { navigate } from "../router";
import { Badge, ErrorBox, Field, Notice, Time, useAsync, useTitle } from "../ui";

const roles: Role[] = ["viewer", "operator", "admin"];
const perms: Permission[] = ["payloads", "audit"];

function AdminNav({ me, current }: { me: Principal; current: "admin" | "audit" }) {
  return (
    <nav class="tabs" aria-label="Admin">
      {atLeast(me.role, "admin") && (
        <a href="/admin" aria-current={current === "admin" ? "page" : undefined}>Users and tokens</a>
      )}
      {me.permissions.includes("audit") && (
        <a href="/admin/audit" aria-current={current === "audit" ? "page" : undefined}>Audit log</a>
      )}
    </nav>
  );
}

export function Admin({ me }: { me: Principal }) {
  useTitle("Admin");
  if (!atLeast(me.role, "admin")) {
    return (
      <section>
        <h1>Admin</h1>
        <AdminNav me={me} current="admin" />
        <Notice>Users and tokens are for admins.</Notice>
      </section>
    );
  }
  return (
    <section>
      <h1>Admin</h1>
      <AdminNav me={me} current="admin" />
      <Users me={me} />
      <Tokens />
    </section>
  );
}

function PermBoxes({ idPrefix, value, onChange }: { idPrefix: string; value: Permission[]; onChange: (v: Permission[]) => void }) {
  return (
    <fieldset class="perms">
      <legend>Permissions</legend>
      {perms.map((p) => (
        <label key={p} for={idPrefix + p}>
          <input id={idPrefix + p} type="checkbox" checked={value.includes(p)}
            onChange={(e) => onChange(e.currentTarget.checked ? [...value, p] : value.filter((x) => x !== p))} />{" "}
          {p}
        </label>
      ))}
    </fieldset>
  );
}

function Users({ me }: { me: Principal }) {
  const users = useAsync(() => api<{ users: User[] }>("GET", "/users"), []);
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [role, setRole] = useState<Role>("viewer");
  const [permissions, setPermissions] = useState<Permission[]>([]);
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  const create = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setDone(undefined);
    try {
      const u = await api<User>("POST", "/users", { name, password, role, permissions });
      setDone(`Created ${u.name} (${u.role}); they choose their own password at the first sign-in.`);
      setName("");
      setPassword("");
      setPermissions([]);
      users.reload();
    } catch (x) {
      setError(x);
    }
  };
  return (
    <>
      <h2>Users</h2>
      <ErrorBox error={users.error} />
      {users.data && (
        <table class="data" data-testid="users">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Role</th>
              <th scope="col">Permissions</th>
              <th scope="col">State</th>
              <th scope="col">Password set</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {users.data.users.map((u) => (
              <UserRow key={u.name} u={u} self={u.name === me.name} onChange={users.reload} />
            ))}
          </tbody>
        </table>
      )}
      <form class="card" onSubmit={create} aria-labelledby="new-user-title">
        <h3 id="new-user-title">New user</h3>
        <div class="grid">
          <Field label="Name" id="nu-name">
            <input id="nu-name" required maxLength={64} pattern="[A-Za-z0-9][A-Za-z0-9._@\-]*" value={name}
              onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <Field label="First password (they change it)" id="nu-password">
            <input id="nu-password" type="password" autocomplete="new-password" required minLength={10} value={password}
              onInput={(e) => setPassword(e.currentTarget.value)} />
          </Field>
          <Field label="Role" id="nu-role">
            <select id="nu-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
              {roles.map((r) => <option key={r} value={r}>{r}</option>)}
            </select>
          </Field>
          <PermBoxes idPrefix="nu-perm-" value={permissions} onChange={setPermissions} />
        </div>
        <ErrorBox error={error} />
        {done && <p role="status" class="ok">{done}</p>}
        <button type="submit" class="primary">Create user</button>
      </form>
    </>
  );
}

function UserRow({ u, self, onChange }: { u: User; self: boolean; onChange: () => void }) {
  const [error, setError] = useState<unknown>();
  const [note, setNote] = useState<string>();
  const [resetting, setResetting] = useState(false);
  const [pw, setPw] = useState("");
  const patch = async (body: Record<string, unknown>) => {
    setError(undefined);
    setNote(undefined);
    try {
      await api("PATCH", "/users/" + enc(u.name), body);
      onChange();
    } catch (x) {
      setError(x);
    }
  };
  const reset = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      await api("PUT", `/users/${enc(u.name)}/password`, { password: pw });
      setPw("");
      setResetting(false);
      setNote("Password set; it must be changed at the next sign-in.");
      onChange();
    } catch (x) {
      setError(x);
    }
  };
  const rid = "role-" + u.name;
  return (
    <tr>
      <th scope="row">
        {u.name}
        {self && <span class="muted"> (you)</span>}
      </th>
      <td>
        <label for={rid} class="sr-only">Role of {u.name}</label>
        <select id={rid} value={u.role} onChange={(e) => patch({ role: e.currentTarget.value })}>
          {roles.map((r) => <option key={r} value={r}>{r}</option>)}
        </select>
      </td>
      <td>
        <div class="row">
          {perms.map((p) => (
            <label key={p} for={`perm-${u.name}-${p}`}>
              <input id={`perm-${u.name}-${p}`} type="checkbox" checked={u.permissions.includes(p)}
                aria-label={`${p} for ${u.name}`}
                onChange={(e) => patch({ permissions: e.currentTarget.checked ? [...u.permissions, p] : u.permissions.filter((x) => x !== p) })} />{" "}
              {p}
            </label>
          ))}
        </div>
      </td>
      <td>
        {u.disabled ? <Badge status="disabled" /> : <Badge status="enabled" />}
        {u.locked && <> <Badge status="locked" /> until <Time at={u.locked_until} /></>}
        {u.must_change_password && <span class="muted small"> must change password</span>}
      </td>
      <td><Time at={u.password_set_at} /></td>
      <td>
        <div class="row">
          <button type="button" onClick={() => patch({ disabled: !u.disabled })}>
            {u.disabled ? "Enable" : "Disable"}
          </button>
          <button type="button" aria-expanded={resetting} onClick={() => setResetting(!resetting)}>
            Reset password
          </button>
        </div>
        {resetting && (
          <form class="inline" onSubmit={reset}>
            <label for={"pw-" + u.name} class="sr-only">New password for {u.name}</label>
            <input id={"pw-" + u.name} type="password" autocomplete="new-password" required minLength={10}
              placeholder="New password" value={pw} onInput={(e) => setPw(e.currentTarget.value)} />
            <button type="submit">Set</button>
          </form>
        )}
        {note && <p role="status" class="ok">{note}</p>}
        <ErrorBox error={error} />
      </td>
    </tr>
  );
}

function Tokens() {
  const tokens = useAsync(() => api<{ tokens: Token[] }>("GET", "/tokens"), []);
  const [name, setName] = useState("");
  const [role, setRole] = useState<Role>("viewer");
  const [permissions, setPermissions] = useState<Permission[]>([]);
  const [created, setCreated] = useState<CreatedToken>();
  const [error, setError] = useState<unknown>();
  const create = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      setCreated(await api<CreatedToken>("POST", "/tokens", { name, role, permissions }));
      setName("");
      setPermissions([]);
      tokens.reload();
    } catch (x) {
      setError(x);
    }
  };
  const revoke = async (t: Token) => {
    if (!confirm(`Revoke the token ${t.name} (${t.id})? Its next call is refused.`)) return;
    setError(undefined);
    try {
      await api("DELETE", "/tokens/" + enc(t.id));
      tokens.reload();
    } catch (x) {
      setError(x);
    }
  };
  return (
    <>
      <h2>API tokens</h2>
      <ErrorBox error={tokens.error} />
      {created && (
        <div class="panel secret" role="status" data-testid="new-token">
          <p>
            <strong>The token {created.token.name}:</strong> copy it now, it is shown this once (only its hash is kept).
          </p>
          <pre class="raw" tabIndex={0} aria-label="The new token" data-testid="secret">{created.secret}</pre>
          <button type="button" onClick={() => setCreated(undefined)}>I have copied it</button>
        </div>
      )}
      {tokens.data && (
        <table class="data" data-testid="tokens">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">ID</th>
              <th scope="col">Role</th>
              <th scope="col">Permissions</th>
              <th scope="col">Created</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {tokens.data.tokens.map((t) => (
              <tr key={t.id}>
                <th scope="row">{t.name}</th>
                <td class="mono">{t.id}</td>
                <td>{t.role}{t.owner ? ` (as ${t.owner})` : ""}</td>
                <td>{t.permissions.length ? t.permissions.join(", ") : "—"}</td>
                <td><Time at={t.created_at} /> by {t.created_by}</td>
                <td>
                  {t.revoked ? (
                    <>revoked <Time at={t.revoked_at} /></>
                  ) : (
                    <button type="button" onClick={() => revoke(t)} aria-label={`Revoke ${t.name}`}>Revoke</button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form class="card" onSubmit={create} aria-labelledby="new-token-title">
        <h3 id="new-token-title">New token</h3>
        <div class="grid">
          <Field label="Name" id="nt-name">
            <input id="nt-name" required maxLength={64} value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <Field label="Role" id="nt-role">
            <select id="nt-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
              {roles.map((r) => <option key={r} value={r}>{r}</option>)}
            </select>
          </Field>
          <PermBoxes idPrefix="nt-perm-" value={permissions} onChange={setPermissions} />
        </div>
        <ErrorBox error={error} />
        <button type="submit" class="primary">Create token</button>
      </form>
    </>
  );
}

export function Audit({ me, params }: { me: Principal; params: URLSearchParams }) {
  useTitle("Audit log");
  const action = params.get("action") ?? "";
  const actor = params.get("actor") ?? "";
  const before = params.get("before") ?? "";
  const allowed = me.permissions.includes("audit");
  const page = useAsync(
    () => (allowed ? api<AuditPage>("GET", "/audit" + query({ action, actor, before })) : Promise.resolve(undefined)),
    [action, actor, before, allowed],
  );
  const [fAction, setFAction] = useState(action);
  const [fActor, setFActor] = useState(actor);
  const filter = (e: Event) => {
    e.preventDefault();
    navigate("/admin/audit" + query({ action: fAction.trim(), actor: fActor.trim() }));
  };
  return (
    <section>
      <h1>Audit log</h1>
      <AdminNav me={me} current="audit" />
      {!allowed ? (
        <Notice>The audit log needs the audit permission.</Notice>
      ) : (
        <>
          <form class="inline filters" onSubmit={filter}>
            <Field label="Action" id="audit-action">
              <input id="audit-action" placeholder="e.g. resendMessage" value={fAction} onInput={(e) => setFAction(e.currentTarget.value)} />
            </Field>
            <Field label="Actor" id="audit-actor">
              <input id="audit-actor" value={fActor} onInput={(e) => setFActor(e.currentTarget.value)} />
            </Field>
            <button type="submit">Filter</button>
            <a class="button-link" href={"/api/v1/audit/export" + query({ action, actor })} download="ductus-audit.ndjson"
              data-testid="audit-export">
              Export as NDJSON{action || actor ? " (these filters)" : ""}
            </a>
          </form>
          <ErrorBox error={page.error} />
          {page.data && page.data.entries.length === 0 && <Notice>No entries.</Notice>}
          {page.data && page.data.entries.length > 0 && (
            <table class="data" data-testid="audit">
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Action</th>
                  <th scope="col">Target</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Detail</th>
                </tr>
              </thead>
              <tbody>
                {page.data.entries.map((a) => (
                  <tr key={a.id}>
                    <td><Time at={a.at} /></td>
                    <td>{a.actor} <span class="muted small">{a.via}{a.address ? " " + a.address : ""}</span></td>
                    <td>{a.action}</td>
                    <td class="wrap">
                      {a.target && a.target.startsWith("msg") ? <a href={"/messages/" + enc(a.target)}>{a.target}</a> : a.target ?? "—"}
                    </td>
                    <td><Badge status={a.outcome} /></td>
                    <td class="wrap mono small">{a.detail ? JSON.stringify(a.detail) : ""}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <nav class="pager" aria-label="Pages">
            {before && <a href={"/admin/audit" + query({ action, actor })}>Newest</a>}
            {page.data?.next && <a href={"/admin/audit" + query({ action, actor, before: page.data.next })}>Older</a>}
          </nav>
        </>
      )}
    </section>
  );
}

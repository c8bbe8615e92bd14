// The account's members: the list for everyone, and for an admin adding a
// member (with the one-time sign-in link to hand over), changing a role and
// removing a member.
import { useState, type FormEvent } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, ApiError, type Schemas } from "../api/client";
import { useAuth, type Role } from "../auth/auth";
import { CopyButton } from "../shell/Dialog";

type Member = Schemas["Member"];
type Added = Schemas["AddedMember"];

const ROLES: Role[] = ["admin", "reviewer", "viewer"];

/** Shared by the member list and the agreement figures, which name members. */
export const membersQuery = { queryKey: ["members"], queryFn: () => api<Schemas["MemberList"]>("/members") };

export function MembersSection() {
  const { isAdmin, myId } = useAuth();
  const list = useQuery(membersQuery);
  const [added, setAdded] = useState<Added | null>(null);
  const live = (list.data?.members ?? []).filter((m) => !m.removed);
  return (
    <section className="panel" aria-labelledby="members-h">
      <h2 id="members-h">Members</h2>
      {list.isPending && <p className="muted" aria-busy="true">Loading members…</p>}
      {list.error && <p role="alert" className="error">Could not load the members: {list.error.message}</p>}
      <table className="traces team-table" aria-label="Members">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Role</th>
            <th scope="col">Added</th>
            {isAdmin && <th scope="col"><span className="sr-only">Actions</span></th>}
          </tr>
        </thead>
        <tbody>
          {live.map((m) => (
            <MemberRow key={m.id} m={m} admin={isAdmin} self={m.id === myId} />
          ))}
        </tbody>
      </table>
      {isAdmin && <AddMember onAdded={setAdded} />}
      {added && <SignInLink added={added} onDone={() => setAdded(null)} />}
    </section>
  );
}

function MemberRow({ m, admin, self }: { m: Member; admin: boolean; self: boolean }) {
  const qc = useQueryClient();
  const [confirm, setConfirm] = useState(false);
  const done = () => qc.invalidateQueries({ queryKey: ["members"] });
  const change = useMutation({ mutationFn: (role: Role) => api<Member>(`/members/${m.id}`, { method: "PATCH", json: { role } }), onSuccess: done });
  const remove = useMutation({ mutationFn: () => api<void>(`/members/${m.id}`, { method: "DELETE" }), onSuccess: done });
  const err = change.error ?? remove.error;
  return (
    <tr aria-label={`Member ${m.name}`}>
      <td>
        {m.name}
        {self && <span className="badge">you</span>}
      </td>
      <td>
        {admin ? (
          <select aria-label={`Role of ${m.name}`} value={m.role} disabled={change.isPending} onChange={(e) => change.mutate(e.target.value as Role)}>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        ) : (
          m.role
        )}
      </td>
      <td>{new Date(m.created_at).toLocaleDateString()}</td>
      {admin && (
        <td>
          {self ? null : confirm ? (
            <span className="row">
              <span>Remove {m.name}? Their keys stop working; their ratings stay theirs.</span>
              <button type="button" className="danger" onClick={() => remove.mutate()} disabled={remove.isPending}>
                Confirm removing {m.name}
              </button>
              <button type="button" className="ghost" onClick={() => setConfirm(false)}>
                Cancel
              </button>
            </span>
          ) : (
            <button type="button" className="ghost" onClick={() => setConfirm(true)}>
              Remove {m.name}
            </button>
          )}
          {err && (
            <p role="alert" className="error">
              {err.message}
            </p>
          )}
        </td>
      )}
    </tr>
  );
}

function AddMember({ onAdded }: { onAdded: (a: Added) => void }) {
  const qc = useQueryClient();
  const [name, setName] = useState("");
  const [role, setRole] = useState<Role>("reviewer");
  const add = useMutation({
    mutationFn: () => api<Added>("/members", { method: "POST", json: { name: name.trim(), role } }),
    onSuccess: (a) => {
      setName("");
      onAdded(a);
      void qc.invalidateQueries({ queryKey: ["members"] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (name.trim()) add.mutate();
  };
  const err = add.error as ApiError | null;
  return (
    <form className="row wrap team-add" onSubmit={submit} aria-label="Add a member">
      <label>
        Name <input value={name} onChange={(e) => setName(e.target.value)} maxLength={80} required />
      </label>
      <label>
        Role{" "}
        <select value={role} onChange={(e) => setRole(e.target.value as Role)}>
          {ROLES.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" className="primary" disabled={add.isPending || !name.trim()}>
        Add member
      </button>
      {err && (
        <p role="alert" className="error">
          {err.code === "member_exists" ? `A member named “${name.trim()}” already exists.` : err.message}
        </p>
      )}
    </form>
  );
}

/** The new member's one-time sign-in link, shown once: the server keeps only a hash of its token. */
function SignInLink({ added, onDone }: { added: Added; onDone: () => void }) {
  return (
    <div className="team-link" role="status" aria-label="Sign-in link">
      <p>
        <strong>{added.member.name}</strong> was added as {added.member.role}. Hand them this sign-in link: it is shown only
        once, and it works once (within 7 days), signing them in with a key of their own.
      </p>
      <div className="row">
        <input readOnly value={added.sign_in_url} aria-label={`Sign-in link for ${added.member.name}`} onFocus={(e) => e.target.select()} />
        <CopyButton text={added.sign_in_url} label={`Copy the sign-in link for ${added.member.name}`} />
        <button type="button" className="ghost" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

/** How many members judge each review queue item: an admin sets it, everyone sees it. */
export function OverlapSetting() {
  const { isAdmin } = useAuth();
  const qc = useQueryClient();
  const cur = useQuery({ queryKey: ["review-overlap"], queryFn: () => api<Schemas["ReviewOverlap"]>("/review-overlap") });
  const [draft, setDraft] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (overlap: number) => api<Schemas["ReviewOverlap"]>("/review-overlap", { method: "PUT", json: { overlap } }),
    onSuccess: (d) => {
      qc.setQueryData(["review-overlap"], d);
      setDraft(null);
    },
  });
  const value = draft ?? String(cur.data?.overlap ?? "");
  return (
    <section className="panel" aria-labelledby="overlap-h">
      <h2 id="overlap-h">Review overlap</h2>
      <p className="muted">How many members the review queue asks to judge each item: 2 or more gives co-rated items, so agreement can be measured.</p>
      {isAdmin ? (
        <form
          className="row"
          onSubmit={(e) => {
            e.preventDefault();
            save.mutate(Number(value));
          }}
        >
          <label>
            Members per item <input type="number" min={1} max={10} value={value} onChange={(e) => setDraft(e.target.value)} />
          </label>
          <button type="submit" disabled={save.isPending || draft === null}>
            Save overlap
          </button>
          {save.error && (
            <p role="alert" className="error">
              {save.error.message}
            </p>
          )}
        </form>
      ) : (
        <p>Members per item: {cur.data?.overlap ?? "…"}</p>
      )}
    </section>
  );
}

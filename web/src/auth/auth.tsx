// Who is signed in: the stored key, checked with GET /me. The key's member
// role (and a read-only key) decides which controls the pages show: they
// hide, rather than disable, what the server would refuse with 403.
import { createContext, useCallback, useContext, useState, type ReactNode } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, ApiError, clearKey, getKey, setKey, type Me } from "../api/client";

/** What a route needs (domain/members): the pages ask may(p), never for a role. */
export type Permission = "read" | "annotate" | "train" | "delete" | "query" | "ingest" | "manage";

export type Role = Me["member"]["role"];

// The same grants as domain/members: a reviewer reads and annotates, a viewer reads.
const grants: Record<Role, readonly Permission[]> = {
  admin: ["read", "annotate", "train", "delete", "query", "ingest", "manage"],
  reviewer: ["read", "annotate"],
  viewer: ["read"],
};

/** Whether the caller may (edge.Permit's rule): false until GET /me answers; a read-only key only reads and queries. */
export function mayDo(me: Me | undefined, p: Permission): boolean {
  if (!me) return false;
  if (me.read_only && p !== "read" && p !== "query") return false;
  return grants[me.member?.role ?? "admin"].includes(p);
}

type Auth = {
  key: string | null;
  me: Me | undefined;
  /** The caller's member id: the author_id of the annotations they make. */
  myId: string;
  role: Role | undefined;
  /** May annotate (rate, comment, answer comparisons): false for a viewer and a read-only key. */
  canWrite: boolean;
  /** May administer: train, delete, query, import, manage members, criteria and settings. */
  isAdmin: boolean;
  may: (p: Permission) => boolean;
  loading: boolean;
  error: string | null;
  signIn: (key: string) => void;
  signOut: () => void;
};

const Ctx = createContext<Auth | null>(null);

export function AuthProvider({ children }: { children: ReactNode }) {
  const [key, setKeyState] = useState<string | null>(getKey());
  const qc = useQueryClient();
  const me = useQuery({
    queryKey: ["me", key],
    queryFn: () => api<Me>("/me"),
    enabled: !!key,
    retry: false,
    staleTime: Infinity,
  });
  const signIn = useCallback(
    (k: string) => {
      setKey(k.trim());
      qc.clear();
      setKeyState(k.trim());
    },
    [qc],
  );
  const signOut = useCallback(() => {
    clearKey();
    qc.clear();
    setKeyState(null);
  }, [qc]);
  let error: string | null = null;
  if (me.error) {
    const e = me.error as ApiError;
    error = e.status === 401 ? "That API key is not valid (it may have been revoked)." : `Could not sign in: ${e.message}`;
  }
  const value: Auth = {
    key,
    me: me.data,
    myId: me.data ? (me.data.member?.id ?? me.data.user_id) : "",
    role: me.data?.member?.role,
    canWrite: mayDo(me.data, "annotate"),
    isAdmin: mayDo(me.data, "manage"),
    may: (p) => mayDo(me.data, p),
    loading: !!key && me.isPending,
    error,
    signIn,
    signOut,
  };
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}

export function useAuth(): Auth {
  const a = useContext(Ctx);
  if (!a) throw new Error("useAuth outside AuthProvider");
  return a;
}

// Who is signed in: the stored key, checked with GET /me. A read-only key
// hides every write control (canWrite false).
import { createContext, useCallback, useContext, useState, type ReactNode } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, ApiError, clearKey, getKey, setKey, type Me } from "../api/client";

type Auth = {
  key: string | null;
  me: Me | undefined;
  canWrite: boolean;
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
    canWrite: !!me.data && !me.data.read_only,
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

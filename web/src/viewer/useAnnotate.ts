import { useCallback, useEffect, useMemo, useState } from "react";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, type AddAnnotation, type Annotation, type EditAnnotation, type TraceDetail } from "../api/client";

/**
 * Annotation writes for one trace. Each answer is put into the cached trace
 * at once — the API answers after the read model applied it, so the answer
 * is what a refetch would say — and only the list's counts are refetched.
 * A write that failed refetches the trace: a 503 may have stored it.
 */
export function useAnnotate(traceId: string) {
  const qc = useQueryClient();
  const key = ["trace", traceId];
  const patch = (f: (a: Annotation[]) => Annotation[]) =>
    qc.setQueryData<TraceDetail>(key, (d) => (d ? withAnnotations(d, f(d.annotations)) : d));
  // A refetch that started before a write answers with the trace as it was
  // before it, and would put a removed vote back into the cache (a quick
  // "-" then "+" then edited a deleted annotation): each write cancels it,
  // and a failed write fetches again.
  const cancel = () => qc.cancelQueries({ queryKey: key });
  const settle = (_data: unknown, err: Error | null) => {
    if (err) void qc.invalidateQueries({ queryKey: key });
    void qc.invalidateQueries({ queryKey: ["traces"] });
  };
  // A new rating replaces the author's earlier one on the same target
  // (the server strips it, keeping any comment); the cache does the same at
  // once so the step never shows two votes of one reviewer.
  const add = useMutation({
    mutationFn: (body: AddAnnotation) => api<Annotation>(`/traces/${traceId}/annotations`, { method: "POST", json: body }),
    onMutate: cancel,
    onSuccess: (a) => patch((l) => [...supersede(l, a), a]),
    onSettled: settle,
  });
  const edit = useMutation({
    mutationFn: ({ id, body }: { id: string; body: EditAnnotation }) => api<Annotation>(`/annotations/${id}`, { method: "PATCH", json: body }),
    onMutate: cancel,
    onSuccess: (a) => patch((l) => supersede(l, a).map((x) => (x.id === a.id ? a : x))),
    onSettled: settle,
  });
  // A deleted annotation can be put back for UNDO_MS (Undo re-adds it with
  // the same target, rating, comment and quote; its id is new).
  const [removed, setRemoved] = useState<Annotation | null>(null);
  const remove = useMutation({
    mutationFn: (id: string) => api<void>(`/annotations/${id}`, { method: "DELETE" }).then(() => id),
    onMutate: async (id) => {
      await cancel();
      const a = qc.getQueryData<TraceDetail>(key)?.annotations.find((x) => x.id === id);
      return { a };
    },
    onSuccess: (id, _v, ctx) => {
      patch((l) => l.filter((x) => x.id !== id));
      if (ctx?.a && (ctx.a.comment != null || ctx.a.quote != null)) setRemoved(ctx.a);
    },
    onSettled: settle,
  });
  useEffect(() => {
    if (!removed) return;
    const t = setTimeout(() => setRemoved(null), UNDO_MS);
    return () => clearTimeout(t);
  }, [removed]);
  const undo = useCallback(() => {
    if (!removed) return;
    const a = removed;
    setRemoved(null);
    add.mutate({
      ...(a.step_id ? { step_id: a.step_id } : {}),
      ...(a.rating != null ? { rating: a.rating } : {}),
      ...(a.comment != null ? { comment: a.comment } : {}),
      ...(a.quote ? { quote: a.quote } : {}),
    });
    // eslint-disable-next-line react-hooks/exhaustive-deps -- add.mutate is stable
  }, [removed]);
  const error = (add.error ?? edit.error ?? remove.error) as Error | null;
  // One object per mutation state, not per render: every StepCard takes it,
  // and useMutation's result is a fresh object on every render, which
  // defeated their memo (each of the viewer's renders — the data's arrival,
  // the virtualizer's measuring, the list's offset — re-rendered every
  // visible step). mutate is stable; what callers read of the rest
  // (isPending, error) follows the state below.
  const state = (m: typeof add | typeof edit | typeof remove) => [m.status, m.submittedAt, m.error, m.data] as const;
  return useMemo(
    () => ({ add, edit, remove, error, removed, undo }),
    // eslint-disable-next-line react-hooks/exhaustive-deps -- keyed on the mutations' states, not their per-render wrappers
    [...state(add), ...state(edit), ...state(remove), removed, undo], // error follows from the three states
  );
}

export type Annotate = ReturnType<typeof useAnnotate>;

/**
 * The trace with its annotations replaced and its header counts recounted
 * the way the server counts them (a flagged rating is not a vote).
 */
function withAnnotations(d: TraceDetail, annotations: Annotation[]): TraceDetail {
  const vote = (r: number) => annotations.filter((a) => a.rating === r && !a.label_error).length;
  return {
    ...d,
    annotations,
    positive_count: vote(1),
    negative_count: vote(-1),
    comment_count: annotations.filter((a) => a.comment != null).length,
    label_error_count: annotations.filter((a) => a.label_error).length,
  };
}

/** How long a deleted comment can be brought back. */
export const UNDO_MS = 8000;

/**
 * The annotations after a: the author's other ratings on a's target lose
 * their rating (those without a comment go); a criterion value replaces the
 * author's earlier value of that criterion on the target.
 */
function supersede(l: Annotation[], a: Annotation): Annotation[] {
  const crit = (x: Annotation) => x.criterion_id ?? null;
  if (crit(a) != null) return l.filter((x) => x.id === a.id || x.author_id !== a.author_id || (x.step_id ?? null) !== (a.step_id ?? null) || crit(x) !== crit(a));
  if (a.rating == null) return l;
  return l.flatMap((x) => {
    if (x.id === a.id || x.author_id !== a.author_id || (x.step_id ?? null) !== (a.step_id ?? null) || x.rating == null) return [x];
    return x.comment != null ? [{ ...x, rating: null }] : [];
  });
}

/**
 * The caller's vote on a target (trace: stepId null): their annotation
 * there that carries a rating, with or without a comment. The server keeps
 * one per reviewer and target.
 */
export function myRating(annotations: Annotation[], me: string, stepId: string | null): Annotation | undefined {
  return annotations.find((a) => a.author_id === me && (a.step_id ?? null) === stepId && a.rating != null);
}

/**
 * Presses a rate button: the same value again takes the vote back (a
 * comment on it stays), the other value changes it, and no vote adds one.
 */
export function rate(ann: Annotate, annotations: Annotation[], me: string, stepId: string | null, value: 1 | -1) {
  const cur = myRating(annotations, me, stepId);
  if (cur && cur.rating === value) {
    if (cur.comment != null) ann.edit.mutate({ id: cur.id, body: { rating: null } });
    else ann.remove.mutate(cur.id);
  } else if (cur) ann.edit.mutate({ id: cur.id, body: { rating: value } });
  else ann.add.mutate(stepId ? { step_id: stepId, rating: value } : { rating: value });
}

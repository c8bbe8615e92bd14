import { useMemo } from "react";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, type AddAnnotation, type Annotation, type EditAnnotation, type TraceDetail } from "../api/client";

/**
 * Annotation writes for one trace. Each answer is put into the cached trace
 * at once (the API answers after the read model applied it), then the
 * trace and the list's counts are refetched.
 */
export function useAnnotate(traceId: string) {
  const qc = useQueryClient();
  const key = ["trace", traceId];
  const patch = (f: (a: Annotation[]) => Annotation[]) =>
    qc.setQueryData<TraceDetail>(key, (d) => (d ? { ...d, annotations: f(d.annotations) } : d));
  const settle = () => {
    void qc.invalidateQueries({ queryKey: key });
    void qc.invalidateQueries({ queryKey: ["traces"] });
  };
  const add = useMutation({
    mutationFn: (body: AddAnnotation) => api<Annotation>(`/traces/${traceId}/annotations`, { method: "POST", json: body }),
    onSuccess: (a) => patch((l) => [...l, a]),
    onSettled: settle,
  });
  const edit = useMutation({
    mutationFn: ({ id, body }: { id: string; body: EditAnnotation }) => api<Annotation>(`/annotations/${id}`, { method: "PATCH", json: body }),
    onSuccess: (a) => patch((l) => l.map((x) => (x.id === a.id ? a : x))),
    onSettled: settle,
  });
  const remove = useMutation({
    mutationFn: (id: string) => api<void>(`/annotations/${id}`, { method: "DELETE" }).then(() => id),
    onSuccess: (id) => patch((l) => l.filter((x) => x.id !== id)),
    onSettled: settle,
  });
  const error = (add.error ?? edit.error ?? remove.error) as Error | null;
  // One object per mutation state, not per render: every StepCard takes it,
  // and useMutation's result is a fresh object on every render, which
  // defeated their memo (each of the viewer's renders — the data's arrival,
  // the virtualizer's measuring, the list's offset — re-rendered every
  // visible step). mutate is stable; what callers read of the rest
  // (isPending, error) follows the state below.
  const state = (m: typeof add | typeof edit | typeof remove) => [m.status, m.submittedAt, m.error, m.data] as const;
  return useMemo(
    () => ({ add, edit, remove, error }),
    // eslint-disable-next-line react-hooks/exhaustive-deps -- keyed on the mutations' states, not their per-render wrappers
    [...state(add), ...state(edit), ...state(remove)], // error follows from the three states
  );
}

export type Annotate = ReturnType<typeof useAnnotate>;

/**
 * The caller's thumb on a target (trace: stepId null): a rating with no
 * comment, by them. Rating again with the same value removes it; the other
 * value changes it.
 */
export function myRating(annotations: Annotation[], me: string, stepId: string | null): Annotation | undefined {
  return annotations.find((a) => a.author_id === me && a.step_id === stepId && a.rating != null && a.comment == null);
}

export function rate(ann: Annotate, annotations: Annotation[], me: string, stepId: string | null, value: 1 | -1) {
  const cur = myRating(annotations, me, stepId);
  if (cur && cur.rating === value) ann.remove.mutate(cur.id);
  else if (cur) ann.edit.mutate({ id: cur.id, body: { rating: value } });
  else ann.add.mutate(stepId ? { step_id: stepId, rating: value } : { rating: value });
}

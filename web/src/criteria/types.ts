// The criteria contract's shapes (issue 33). Local until
// handlers/rest/openapi.json describes them; then these become aliases of
// the generated schema types (api/client.ts).
import type { Annotation } from "../api/client";

export type CriterionKind = "binary" | "categorical" | "scale";
export type AppliesTo = "trace" | "assistant" | "tool_call";
export type Label = { name: string; score: number };

export type Criterion = {
  criterion_id: string;
  name: string;
  description: string | null;
  kind: CriterionKind;
  labels: Label[];
  scale_max: number | null;
  applies_to: AppliesTo;
  archived: boolean;
  created_at: string;
};

export type NewCriterion = {
  name: string;
  description?: string;
  kind: CriterionKind;
  labels?: { name: string; score?: number }[];
  scale_max?: number;
  applies_to: AppliesTo;
};

export type CriterionEdit = { name?: string; description?: string; labels?: { name: string; score?: number }[] };

export type Guidelines = { markdown: string; updated_at: string | null };

/** A criterion value as stored: binary "yes"/"no", a label name, or a scale number. */
export type Value = string | number;

/** An annotation as the trace JSON gives it, with the criterion value the contract adds (null on ratings and comments). */
export type ValueAnnotation = Annotation & { criterion_id?: string | null; value?: Value | null };

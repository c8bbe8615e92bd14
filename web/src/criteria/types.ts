// The criteria contract's shapes (issue 33), from the OpenAPI document.
import type { Annotation, Schemas } from "../api/client";

export type Criterion = Schemas["Criterion"];
export type CriterionKind = Criterion["kind"];
export type AppliesTo = Criterion["applies_to"];
export type NewCriterion = Schemas["CriterionCreate"];
export type CriterionEdit = Schemas["CriterionPatch"];
export type Guidelines = Schemas["Guidelines"];

/** A criterion value as stored: binary "yes"/"no", a label name, or a scale number. */
export type Value = string | number;

/** An annotation; criterion_id and value are set on criterion values (null on ratings and comments). */
export type ValueAnnotation = Annotation;

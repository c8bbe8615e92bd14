import { useQuery } from "@tanstack/react-query";
import { baseModelsQuery } from "./CreateModelDialog";

/** Begins every "the hub cannot be reached" failure (rewardmodels.HubUnreachablePhrase). */
export const HUB_UNREACHABLE = "cannot reach the Hugging Face hub";

/**
 * Whether Retry can help a failed model. A model that failed because the
 * workers could not reach the hub would fail the same way again, so Retry
 * is offered only once something changed — GET /base-models lists its
 * base as reachable — and until then the page says what to change
 * (HF_ENDPOINT/HF_TOKEN on the workers, or a new model on a base they
 * have). Any other failure keeps Retry as before.
 */
export function useRetryGate(m: { status: string; error?: string | null; base_model: string }): { canRetry: boolean; advice: string | null } {
  const hubFailure = m.status === "failed" && !!m.error?.includes(HUB_UNREACHABLE);
  const bases = useQuery({ ...baseModelsQuery(), enabled: hubFailure });
  if (!hubFailure) return { canRetry: true, advice: null };
  const base = bases.data?.bases.find((b) => b.id === m.base_model);
  if (base?.reachable) return { canRetry: true, advice: null };
  const local = (bases.data?.bases ?? []).filter((b) => b.reachable).map((b) => b.name);
  return {
    canRetry: false,
    advice:
      `Retrying would fail the same way: the workers still cannot load ${m.base_model}. ` +
      "Set HF_ENDPOINT on the workers to a hub or mirror they can reach (and HF_TOKEN if it needs one) — Retry appears once they can — " +
      (local.length ? `or create a new model on a base they have: ${local.join(", ")}.` : "or put a checkpoint under CRITIC_MODEL_ROOTS and create a new model on it."),
  };
}

#!/usr/bin/env python3
"""Golden numbers from real Hugging Face transformers, for machines that have it.

Same request/response JSON as torch_reference.py's `golden` mode, but the model is
loaded with AutoModelForSequenceClassification.from_pretrained(model_dir) — the exact
path Stash's worker takes — so it also proves the Go checkpoint loads unchanged.

  python3 transformers_golden.py < request.json > golden.json
  python3 transformers_golden.py --check gpuworker/testdata/golden/tiny-qwen3.golden.json \
      --model gpuworker/testdata/golden/tiny-qwen3

--check rebuilds the request the Go golden test uses and compares within 1e-4.
Needs: torch, transformers >= 4.51 (Qwen3). Runs on CPU or CUDA (float32 either way).
"""
import argparse
import json
import sys

import torch
from transformers import AutoModelForSequenceClassification


def golden_request(model_dir):
    # Mirrors goldenReq in gpuworker/train/golden_test.go.
    def seq(n, start):
        return [1 + (start + 7 * i) % 63 for i in range(n)]

    return {
        "model_dir": model_dir,
        "chosen": [seq(37, 3), seq(5, 11), seq(20, 1)],
        "rejected": [seq(12, 9), seq(40, 2), seq(1, 5)],
        "grad_params": ["score.weight", "model.norm.weight", "model.layers.1.self_attn.q_norm.weight",
                        "model.layers.0.self_attn.k_proj.weight", "model.layers.1.mlp.down_proj.weight",
                        "model.embed_tokens.weight"],
    }


def run(req, device):
    model = AutoModelForSequenceClassification.from_pretrained(
        req["model_dir"], torch_dtype=torch.float32, attn_implementation="eager").to(device)
    assert model.config.num_labels == 1, model.config.num_labels
    pad = model.config.pad_token_id
    seqs = req["chosen"] + req["rejected"]
    T = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), T), dtype=torch.long)
    for i, s in enumerate(seqs):  # right padding, as the Go batcher does
        ids[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s)] = 1
    model.train(False)  # no dropout; gradients still flow
    r = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits[:, 0]
    n = len(req["chosen"])
    loss = torch.nn.functional.softplus(-(r[:n] - r[n:])).mean()
    loss.backward()
    params = dict(model.named_parameters())
    return {
        "rewards_chosen": r[:n].tolist(),
        "rewards_rejected": r[n:].tolist(),
        "loss": loss.item(),
        "grads": {k: params[k].grad.flatten().tolist() for k in req.get("grad_params", [])},
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check")
    ap.add_argument("--model")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    if a.check:
        got = run(golden_request(a.model), a.device)
        want = json.load(open(a.check))
        worst = 0.0
        for k in ("rewards_chosen", "rewards_rejected"):
            worst = max([worst] + [abs(x - y) for x, y in zip(want[k], got[k])])
        worst = max(worst, abs(want["loss"] - got["loss"]))
        for k, g in want["grads"].items():
            worst = max([worst] + [abs(x - y) for x, y in zip(g, got["grads"][k])])
        print(json.dumps({"max_abs_diff": worst, "ok": worst < 1e-4}))
        sys.exit(0 if worst < 1e-4 else 1)
    json.dump(run(json.load(sys.stdin), a.device), sys.stdout)


if __name__ == "__main__":
    main()

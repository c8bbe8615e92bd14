#!/usr/bin/env python3
"""Time one reward-model training step in PyTorch/transformers, beside gpustep's.

Same work as `go run ./gpuworker/scripts/gpustep`: a Qwen3-0.6B-shaped
Qwen3ForSequenceClassification (num_labels=1, random weights, float32), batch 4 pairs x
1024 tokens (chosen + rejected = 8 sequences), Bradley-Terry loss softplus(r_rej - r_cho),
AdamW lr 1e-5. The model is built the way transformers_golden.py builds it
(AutoModelForSequenceClassification, float32), from a config instead of a checkpoint.
Prints one JSON line.

  python3 transformers_step.py [--device cuda] [--steps 5] [--warmup 2] [--attn sdpa] [--tf32 1]
"""
import argparse
import json
import statistics
import time

import torch
from transformers import AutoModelForSequenceClassification, Qwen3Config

VOCAB, PAD = 151936, 151643


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--len", type=int, default=1024)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--attn", default="sdpa", help="eager or sdpa (transformers' default)")
    ap.add_argument("--tf32", type=int, default=1, help="TF32 matmuls (the XLA CUDA backend's default)")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = bool(a.tf32)
    torch.backends.cudnn.allow_tf32 = bool(a.tf32)
    torch.manual_seed(0)

    cfg = Qwen3Config(vocab_size=VOCAB, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                      num_attention_heads=16, num_key_value_heads=8, head_dim=128, rms_norm_eps=1e-6,
                      rope_theta=1000000.0, max_position_embeddings=40960, tie_word_embeddings=True,
                      num_labels=1, pad_token_id=PAD)
    t0 = time.perf_counter()
    model = AutoModelForSequenceClassification.from_config(cfg, attn_implementation=a.attn)
    model = model.float().to(a.device)
    model.train(False)  # no dropout (Qwen3 has none anyway); gradients still flow
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    n = 2 * a.pairs
    ids = torch.randint(0, PAD, (n, a.len), device=a.device)  # never the pad id
    mask = torch.ones_like(ids)

    def step():
        r = model(input_ids=ids, attention_mask=mask).logits[:, 0]
        loss = torch.nn.functional.softplus(r[a.pairs:] - r[: a.pairs]).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()  # syncs, as the Go step reads its loss back

    sync = torch.cuda.synchronize if a.device.startswith("cuda") else (lambda: None)
    first_loss = step()
    sync()
    first = time.perf_counter() - t0
    for _ in range(a.warmup - 1):
        step()
    secs = []
    for _ in range(a.steps):
        sync()
        t = time.perf_counter()
        step()
        sync()
        secs.append(time.perf_counter() - t)
    med = statistics.median(secs)
    out = {
        "engine": "pytorch-transformers", "torch": torch.__version__,
        "transformers": __import__("transformers").__version__, "device": a.device,
        "gpu": torch.cuda.get_device_name(0) if a.device.startswith("cuda") else None,
        "attn_implementation": a.attn, "tf32": bool(a.tf32), "shape": "qwen3-0.6b random",
        "batch": f"{a.pairs} pairs x {a.len} tokens", "build_first_step_s": first,
        "step_seconds_median": med, "step_seconds_all": secs, "tokens_per_s": n * a.len / med,
        "first_loss": first_loss,
        "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30 if a.device.startswith("cuda") else None,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Plain-PyTorch reference for Critic's Go reward model (no transformers needed).

Rebuilds HF's Qwen3/Qwen2/Llama *ForSequenceClassification(num_labels=1) forward from
scratch (RMSNorm, HF rotate_half RoPE, GQA repeat_kv, q/k norm, SwiGLU, last-non-pad
pooling), loads the same model.safetensors the Go code wrote (parsed with struct +
torch.frombuffer, since torch 1.13 has no safetensors module), and reports rewards, the
Bradley-Terry loss and its gradients.

  torch_reference.py golden  < request.json  > golden.json
  torch_reference.py bench   --steps N        (train-step timing of the tiny config)
  torch_reference.py score-bench --plan plan.json --threads N
                                              (forward timing of BenchmarkScoreEngine's batches)

request.json: {"model_dir", "chosen": [[ids]], "rejected": [[ids]], "grad_params": [names]}
"""
import json
import math
import struct
import sys
import time

import torch
import torch.nn.functional as F

torch.use_deterministic_algorithms(True)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        raw = bytearray(data[base + a : base + b])
        if info["dtype"] == "F32":
            t = torch.frombuffer(raw, dtype=torch.float32)
        elif info["dtype"] == "BF16":
            t = torch.frombuffer(raw, dtype=torch.bfloat16).float()
        elif info["dtype"] == "F16":
            t = torch.frombuffer(raw, dtype=torch.float16).float()
        else:
            raise ValueError(info["dtype"])
        out[name] = t.reshape(info["shape"]).clone()
    return out


class Cfg:
    def __init__(self, d):
        self.h = d["hidden_size"]
        self.layers = d["num_hidden_layers"]
        self.nh = d["num_attention_heads"]
        self.nkv = d.get("num_key_value_heads") or self.nh
        self.hd = d.get("head_dim") or self.h // self.nh
        self.eps = d.get("rms_norm_eps", 1e-6)
        self.theta = d.get("rope_theta", 10000.0)
        self.pad = d.get("pad_token_id")
        arch = d["architectures"][0]
        self.qk_norm = arch.startswith("Qwen3")
        self.bias_qkv = arch.startswith("Qwen2") or d.get("attention_bias", False)
        self.bias_o = arch.startswith("Llama") and d.get("attention_bias", False)


def rms_norm(x, w, eps):
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def rope(cfg, T):
    inv_freq = 1.0 / (cfg.theta ** (torch.arange(0, cfg.hd, 2, dtype=torch.int64).float() / cfg.hd))
    pos = torch.arange(T).float()
    freqs = (inv_freq[:, None] @ pos[None, :]).transpose(0, 1)  # [T, hd/2], f32 as HF
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def forward(cfg, W, ids, mask):
    """ids, mask: [B, T]. Returns rewards [B]."""
    B, T = ids.shape
    x = W["model.embed_tokens.weight"][ids]
    cos, sin = rope(cfg, T)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    allowed = causal[None, None] & mask.bool()[:, None, None, :]
    neg = torch.finfo(torch.float32).min
    for l in range(cfg.layers):
        p = f"model.layers.{l}."
        h = rms_norm(x, W[p + "input_layernorm.weight"], cfg.eps)

        def lin(name, inp, bias):
            return F.linear(inp, W[p + name + ".weight"], W.get(p + name + ".bias") if bias else None)

        q = lin("self_attn.q_proj", h, cfg.bias_qkv).view(B, T, cfg.nh, cfg.hd)
        k = lin("self_attn.k_proj", h, cfg.bias_qkv).view(B, T, cfg.nkv, cfg.hd)
        v = lin("self_attn.v_proj", h, cfg.bias_qkv).view(B, T, cfg.nkv, cfg.hd)
        if cfg.qk_norm:
            q = rms_norm(q, W[p + "self_attn.q_norm.weight"], cfg.eps)
            k = rms_norm(k, W[p + "self_attn.k_norm.weight"], cfg.eps)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B, heads, T, hd]
        q = q * cos[None, None] + rotate_half(q) * sin[None, None]
        k = k * cos[None, None] + rotate_half(k) * sin[None, None]
        rep = cfg.nh // cfg.nkv  # HF repeat_kv
        k = k[:, :, None].expand(B, cfg.nkv, rep, T, cfg.hd).reshape(B, cfg.nh, T, cfg.hd)
        v = v[:, :, None].expand(B, cfg.nkv, rep, T, cfg.hd).reshape(B, cfg.nh, T, cfg.hd)
        s = (q @ k.transpose(2, 3)) * cfg.hd**-0.5
        s = s.masked_fill(~allowed, neg)
        a = torch.softmax(s, dim=-1) @ v
        a = a.transpose(1, 2).reshape(B, T, cfg.nh * cfg.hd)
        x = x + lin("self_attn.o_proj", a, cfg.bias_o)
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], cfg.eps)
        x = x + lin("mlp.down_proj", F.silu(lin("mlp.gate_proj", h, False)) * lin("mlp.up_proj", h, False), False)
    x = rms_norm(x, W["model.norm.weight"], cfg.eps)
    logits = F.linear(x, W["score.weight"])[..., 0]  # [B, T]
    # transformers >= 4.48: last position whose id != pad_token_id
    non_pad = (ids != cfg.pad).int()
    last = (torch.arange(T) * non_pad).argmax(-1)
    return logits[torch.arange(B), last]


def pad_batch(seqs, pad, T=None):
    T = T or max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), T), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s)] = 1
    return ids, mask


def bt_loss(r_chosen, r_rejected):
    return F.softplus(-(r_chosen - r_rejected)).mean()  # = -log sigmoid(rc - rr), stable


def golden():
    req = json.load(sys.stdin)
    d = json.load(open(req["model_dir"] + "/config.json"))
    cfg = Cfg(d)
    W = read_safetensors(req["model_dir"] + "/model.safetensors")
    for t in W.values():
        t.requires_grad_(True)
    n = len(req["chosen"])
    ids, mask = pad_batch(req["chosen"] + req["rejected"], cfg.pad)
    r = forward(cfg, W, ids, mask)
    loss = bt_loss(r[:n], r[n:])
    loss.backward()
    out = {
        "rewards_chosen": r[:n].tolist(),
        "rewards_rejected": r[n:].tolist(),
        "loss": loss.item(),
        "grads": {name: W[name].grad.flatten().tolist() for name in req.get("grad_params", [])},
    }
    json.dump(out, sys.stdout)


def bench():
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("mode")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    d = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
             intermediate_size=384, vocab_size=1000, rms_norm_eps=1e-6, rope_theta=1e6, pad_token_id=0,
             architectures=["Qwen3ForSequenceClassification"])
    cfg = Cfg(d)
    h, hd = cfg.h, cfg.hd
    shapes = {"model.embed_tokens.weight": (1000, h), "model.norm.weight": (h,), "score.weight": (1, h)}
    for l in range(cfg.layers):
        p = f"model.layers.{l}."
        shapes.update({p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
                       p + "self_attn.q_proj.weight": (cfg.nh * hd, h), p + "self_attn.k_proj.weight": (cfg.nkv * hd, h),
                       p + "self_attn.v_proj.weight": (cfg.nkv * hd, h), p + "self_attn.o_proj.weight": (h, cfg.nh * hd),
                       p + "self_attn.q_norm.weight": (hd,), p + "self_attn.k_norm.weight": (hd,),
                       p + "mlp.gate_proj.weight": (384, h), p + "mlp.up_proj.weight": (384, h),
                       p + "mlp.down_proj.weight": (h, 384)})
    W = {k: (torch.randn(s) * 0.02 if len(s) == 2 else torch.ones(s)).requires_grad_(True) for k, s in shapes.items()}
    opt = torch.optim.AdamW(W.values(), lr=1e-5, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    g = torch.Generator().manual_seed(0)
    seqs = [torch.randint(1, 1000, (128,), generator=g).tolist() for _ in range(8)]
    ids, mask = pad_batch(seqs, 0)

    def step():
        opt.zero_grad()
        r = forward(cfg, W, ids, mask)
        loss = bt_loss(r[:4], r[4:])
        loss.backward()
        opt.step()
        return loss.item()

    step()  # warm-up
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    dt = (time.perf_counter() - t0) / a.steps
    print(json.dumps({"torch_step_seconds": dt, "threads": torch.get_num_threads(), "torch": torch.__version__}))


def qwen3_06b_shapes(layers, vocab):
    """Qwen3-0.6B's tensor shapes (hidden 1024, 16 q / 8 kv heads of 128, MLP 3072)."""
    h, nh, nkv, hd, mlp = 1024, 16, 8, 128, 3072
    shapes = {"model.embed_tokens.weight": (vocab, h), "model.norm.weight": (h,), "score.weight": (1, h)}
    for l in range(layers):
        p = f"model.layers.{l}."
        shapes.update({p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
                       p + "self_attn.q_proj.weight": (nh * hd, h), p + "self_attn.k_proj.weight": (nkv * hd, h),
                       p + "self_attn.v_proj.weight": (nkv * hd, h), p + "self_attn.o_proj.weight": (h, nh * hd),
                       p + "self_attn.q_norm.weight": (hd,), p + "self_attn.k_norm.weight": (hd,),
                       p + "mlp.gate_proj.weight": (mlp, h), p + "mlp.up_proj.weight": (mlp, h),
                       p + "mlp.down_proj.weight": (h, mlp)})
    return shapes


def score_bench():
    """Times the forward of BenchmarkScoreEngine's exact batches (same ids, same padded
    shapes, same filler rows) in fp32 under no_grad: one warm-up pass, one timed pass per
    scenario, and reports peak RSS (ru_maxrss)."""
    import argparse
    import resource

    ap = argparse.ArgumentParser()
    ap.add_argument("mode")
    ap.add_argument("--plan", required=True)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.use_deterministic_algorithms(False)
    plan = json.load(open(a.plan))
    d = dict(hidden_size=1024, num_hidden_layers=plan["layers"], num_attention_heads=16, num_key_value_heads=8,
             head_dim=128, intermediate_size=3072, vocab_size=plan["vocab"], rms_norm_eps=1e-6, rope_theta=1e6,
             pad_token_id=plan["pad"], architectures=["Qwen3ForSequenceClassification"])
    cfg = Cfg(d)
    torch.manual_seed(0)
    W = {k: (torch.randn(s) * 0.02 if len(s) == 2 else torch.ones(s))
         for k, s in qwen3_06b_shapes(cfg.layers, plan["vocab"]).items()}
    out = {"threads": torch.get_num_threads(), "torch": torch.__version__, "scenarios": {}}
    with torch.no_grad():
        for sc in plan["scenarios"]:
            batches = []
            for b in sc["plan"]:
                seqs = [sc["seqs"][i] for i in b["index"]] + [[cfg.pad]] * (b["rows"] - len(b["index"]))
                batches.append(pad_batch(seqs, cfg.pad, b["len"]))
            for ids, mask in batches:  # warm-up
                forward(cfg, W, ids, mask)
            t0 = time.perf_counter()
            for ids, mask in batches:
                forward(cfg, W, ids, mask)
            out["scenarios"][sc["name"]] = time.perf_counter() - t0
    out["torch_peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20)
    print(json.dumps(out))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "bench":
        bench()
    elif len(sys.argv) > 1 and sys.argv[1] == "score-bench":
        score_bench()
    else:
        golden()

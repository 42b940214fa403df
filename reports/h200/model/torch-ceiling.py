#!/usr/bin/env python3
"""The ceiling of a model audit: how long a plain PyTorch loop (cuBLAS GEMMs, PyTorch's SDPA, no
harness) takes to decode the same Llama-shaped model, same batch, prompt length and number of new
tokens as an nvdet model scenario. nvdet's time per case over this time is the harness overhead.

Synthetic bf16 weights (seeded, on the GPU), prompt of `prompt_len` random tokens per sequence,
whole-prompt prefill, then greedy decode with a preallocated KV cache; token ids stay on the device
(no host sync per step). Each batch is timed after one short warm-up run of the same shapes.

Usage: torch-ceiling.py --layers 32 --vocab 128256 --batch 8 64 --out ceiling.json
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def rms_norm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rope_tables(max_len, head_dim, theta, device):
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    ang = torch.outer(torch.arange(max_len, device=device, dtype=torch.float32), inv)
    return ang.cos(), ang.sin()


def apply_rope(x, cos, sin):  # x: [B, H, T, D]; rotate-half convention
    d = x.shape[-1] // 2
    x1, x2 = x[..., :d].float(), x[..., d:].float()
    c, s = cos[None, None], sin[None, None]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1).to(x.dtype)


class Model:
    def __init__(self, a, device):
        g = torch.Generator(device=device).manual_seed(a.seed)
        dt = torch.bfloat16

        def w(*shape):
            return (torch.randn(*shape, generator=g, device=device, dtype=torch.float32)
                    * shape[-1] ** -0.5).to(dt)

        q, kv = a.heads * a.head_dim, a.kv_heads * a.head_dim
        self.a = a
        self.embed = w(a.vocab, a.hidden)
        self.layers = [dict(n1=torch.ones(a.hidden, device=device, dtype=dt),
                            qkv=w(q + 2 * kv, a.hidden), o=w(a.hidden, q),
                            n2=torch.ones(a.hidden, device=device, dtype=dt),
                            gate_up=w(2 * a.intermediate, a.hidden), down=w(a.hidden, a.intermediate))
                       for _ in range(a.layers)]
        self.norm = torch.ones(a.hidden, device=device, dtype=dt)
        self.head = w(a.vocab, a.hidden)
        self.cos, self.sin = rope_tables(a.prompt_len + a.new_tokens, a.head_dim, a.rope_theta, device)

    def forward(self, ids, pos, kcache, vcache):
        a = self.a
        B, T = ids.shape
        x = self.embed[ids]
        cos, sin = self.cos[pos:pos + T], self.sin[pos:pos + T]
        q_dim, kv_dim = a.heads * a.head_dim, a.kv_heads * a.head_dim
        for i, L in enumerate(self.layers):
            h = rms_norm(x, L["n1"], 1e-5)
            qkv = h @ L["qkv"].t()
            q, k, v = qkv.split([q_dim, kv_dim, kv_dim], -1)
            q = apply_rope(q.view(B, T, a.heads, a.head_dim).transpose(1, 2), cos, sin)
            k = apply_rope(k.view(B, T, a.kv_heads, a.head_dim).transpose(1, 2), cos, sin)
            kcache[i][:, :, pos:pos + T] = k
            vcache[i][:, :, pos:pos + T] = v.view(B, T, a.kv_heads, a.head_dim).transpose(1, 2)
            keys, values = kcache[i][:, :, :pos + T], vcache[i][:, :, :pos + T]
            if T == 1:
                # One query token: its `group` heads per KV head are the query rows of that KV head
                # (no mask), which every SDPA backend takes without GQA support.
                attn = F.scaled_dot_product_attention(
                    q.reshape(B, a.kv_heads, a.heads // a.kv_heads, a.head_dim), keys, values)
                attn = attn.reshape(B, a.heads, 1, a.head_dim)
            else:
                attn = F.scaled_dot_product_attention(q, keys, values, is_causal=True, enable_gqa=True)
            x = x + attn.transpose(1, 2).reshape(B, T, q_dim) @ L["o"].t()
            h = rms_norm(x, L["n2"], 1e-5)
            gate, up = (h @ L["gate_up"].t()).chunk(2, -1)
            x = x + (F.silu(gate) * up) @ L["down"].t()
        logits = rms_norm(x[:, -1], self.norm, 1e-5) @ self.head.t()
        return logits.argmax(-1)

    @torch.inference_mode()
    def decode(self, batch, new_tokens, seed):
        a = self.a
        dev = self.embed.device
        g = torch.Generator(device=dev).manual_seed(seed)
        ids = torch.randint(0, a.vocab, (batch, a.prompt_len), generator=g, device=dev)
        shape = (batch, a.kv_heads, a.prompt_len + new_tokens, a.head_dim)
        kc = [torch.empty(shape, device=dev, dtype=torch.bfloat16) for _ in range(a.layers)]
        vc = [torch.empty(shape, device=dev, dtype=torch.bfloat16) for _ in range(a.layers)]
        tok = self.forward(ids, 0, kc, vc)
        out = [tok]
        for step in range(new_tokens - 1):
            tok = self.forward(tok[:, None], a.prompt_len + step, kc, vc)
            out.append(tok)
        return torch.stack(out, 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=32)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--intermediate", type=int, default=14336)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--rope-theta", type=float, default=500000.0)
    p.add_argument("--prompt-len", type=int, default=32)
    p.add_argument("--new-tokens", type=int, default=256)
    p.add_argument("--batch", type=int, nargs="+", default=[8, 64])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    model = Model(a, torch.device("cuda"))
    # Not cuDNN's SDPA: it builds a new plan for every KV length, i.e. at every decode step, which
    # would time plan building rather than decoding.
    backends = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    rows = []
    for b in a.batch:
        with sdpa_kernel(backends):
            model.decode(b, 8, a.seed)  # warm-up: cuBLAS handles, allocator
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            toks = model.decode(b, a.new_tokens, a.seed)
            torch.cuda.synchronize()
        s = time.perf_counter() - t0
        rows.append(dict(batch=b, seconds=s, tokens_per_s=b * a.new_tokens / s,
                         distinct_first_tokens=int(toks[:, 0].unique().numel())))
        print(f"batch {b:4d}: {s:7.3f} s, {b * a.new_tokens / s:9.0f} tokens/s", flush=True)
    with open(a.out, "w") as f:
        json.dump(dict(model=vars(a), torch=torch.__version__, device=torch.cuda.get_device_name(),
                       runs=rows), f, indent=1)


if __name__ == "__main__":
    main()

"""Greedy decoding with a KV cache: a tiny decoder whose per-layer caches grow one token per step.

Two prompts (6 and 9 tokens), each prefilled (`caches=None`, `ids` of the prompt's length) then decoded
8 tokens one at a time (`ids` of length 1, the caches of the last step passed back). torch 2.13 compiles
`forward` 5 times: the prefill, the first decode step (`caches` None -> a list, `ids` 6 -> 1 at dim 1),
the second (the caches' length at dim 2: automatic dynamic), the second prompt (`ids` 9 at dim 1 and
`start` become dynamic), and its first decode step. The prefill and decode paths are two entries by
nature (`caches is None` picks the path); a length of 1 gets its own entry even on a dynamic dim.
guarddiag's hint for `ids` (size-oblivious backed sizes with `ids` dim 1 dynamic from the first compile)
removes the recompiles on `ids`: 4 compiles.
"""
import _truth
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)

    def forward(self, x, cache):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None)
        x = x + self.out(a.transpose(1, 2).reshape(b, t, d))
        x = x + self.mlp(self.ln2(x))
        return x, (k, v)


class TinyLM(nn.Module):
    def __init__(self, vocab=97, d=64, layers=2, heads=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(256, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.head = nn.Linear(d, vocab)

    def forward(self, ids, start, caches=None):
        pos = torch.arange(start, start + ids.shape[1])
        x = self.emb(ids) + self.pos(pos)
        new = []
        for i, block in enumerate(self.blocks):
            x, c = block(x, None if caches is None else caches[i])
            new.append(c)
        return self.head(x[:, -1]), new


model = TinyLM().eval()
step = torch.compile(model)

with torch.no_grad():
    for prompt_len in (6, 9):
        ids = torch.randint(0, 97, (1, prompt_len))
        logits, caches = step(ids, 0)
        out = [int(logits.argmax())]
        for i in range(8):
            nxt = torch.tensor([[out[-1]]])
            logits, caches = step(nxt, prompt_len + i, caches)
            out.append(int(logits.argmax()))
        print(prompt_len, out)
_truth.write()

"""A small GPT (token + position embeddings, causal self-attention blocks, LM head) and greedy
generation that feeds the whole sequence back each step, so the sequence length grows by one per step.

The compiled model sees `idx` of shape (batch, T) with T = 4, 5, ..., 12. torch 2.13 compiles it for
T=4, recompiles once on the size of `idx` dim 1 (automatic dynamic then makes that dim dynamic) and
compiles no more. CORPUS_FIX=1 marks dim 1 dynamic before the first call: one compile.
"""

import os

import _truth
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.size(1)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab: int = 64, dim: int = 32, heads: int = 2, layers: int = 2, block_size: int = 32) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(block_size, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.size(1))
        x = self.tok(idx) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


@torch.no_grad()
def generate(model: nn.Module, idx: torch.Tensor, new_tokens: int) -> torch.Tensor:
    for _ in range(new_tokens):
        logits = model(idx)
        nxt = F.softmax(logits[:, -1, :], dim=-1).argmax(dim=-1, keepdim=True)
        idx = torch.cat([idx, nxt], dim=1)
        if os.environ.get("CORPUS_FIX") == "1":
            torch._dynamo.mark_dynamic(idx, 1)
    return idx


torch.manual_seed(0)
model = TinyGPT().eval()
compiled = torch.compile(model, backend="eager")
prompt = torch.randint(0, 64, (1, 4))
if os.environ.get("CORPUS_FIX") == "1":
    torch._dynamo.mark_dynamic(prompt, 1)
out = generate(compiled, prompt, 8)
print("generated", out.shape[1], "tokens")
_truth.write()

"""A transformers GPT-2 built from a small GPT2Config (random weights, nothing downloaded), compiled,
and used through `generate()` with greedy decoding and the default dynamic KV cache.

Needs `transformers` (tests skip without it). `generate()` calls the compiled model once for the prompt
and once per new token with a KV cache it builds itself: the cache grows every step.
"""

import _truth
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(vocab_size=128, n_positions=64, n_embd=32, n_layer=2, n_head=2, bos_token_id=127, eos_token_id=127)
model = GPT2LMHeadModel(config).eval()
model.forward = torch.compile(model.forward, backend="eager")
prompt = torch.randint(0, 128, (1, 5))
out = model.generate(prompt, max_new_tokens=6, min_new_tokens=6, do_sample=False, pad_token_id=0)
print("generated", out.shape[1] - prompt.shape[1], "tokens")
_truth.write()

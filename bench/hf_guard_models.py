"""Real transformer models for the guard-cost figures of issue 28: a transformers GPT-2 or Llama built from a
small config (random weights, nothing downloaded), compiled whole, called as a serving loop calls it.

``generate()`` calls the compiled ``forward`` once for the prompt and once per new token with its own KV cache;
the prompt length changes between requests, so the function recompiles (automatic dynamic) and has more than
one cache entry, each with the guards of every layer's parameters and modules.

    guarddiag run bench/hf_guard_models.py -- --model llama --layers 4
"""

import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM


def build(name: str, layers: int) -> torch.nn.Module:
    if name == "gpt2":
        config = GPT2Config(vocab_size=128, n_positions=128, n_embd=32, n_layer=layers, n_head=2, bos_token_id=127, eos_token_id=127)
        return GPT2LMHeadModel(config)
    config = LlamaConfig(
        vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=128, bos_token_id=127, eos_token_id=127,
    )
    return LlamaForCausalLM(config)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("gpt2", "llama"), default="gpt2")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--backend", default="eager", help="torch.compile backend (default eager; inductor for real compiles)")
    parser.add_argument("--requests", type=int, default=3, help="prompts of different lengths, one generate() each")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = build(args.model, args.layers).eval()
    model.forward = torch.compile(model.forward, backend=args.backend)
    for length in range(5, 5 + args.requests):
        prompt = torch.randint(0, 120, (1, length))
        with torch.no_grad():
            out = model.generate(prompt, max_new_tokens=4, min_new_tokens=4, do_sample=False, pad_token_id=0)
        print("request", length, "generated", out.shape[1] - length, "tokens")


if __name__ == "__main__":
    main()

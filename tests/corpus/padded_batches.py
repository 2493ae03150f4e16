"""A text classifier fed batches padded to the longest sequence of each batch: token ids and their padding
mask are new tensors every batch, and their length (dim 1) varies.

torch compiles for the first length, recompiles on the second (automatic dynamic then makes dim 1 of
`ids` and `mask` dynamic) and compiles no more: 2 compiles. `mark_dynamic(mask, 1)` before the first
call marks one tensor object only, and raises where torch must keep a size static; the fix guarddiag
gives marks both tensors of each batch with `maybe_mark_dynamic` before each call: one compile.
"""
import _truth
import torch
import torch.nn as nn

torch.manual_seed(0)


class Classifier(nn.Module):
    def __init__(self, vocab=100, dim=32, classes=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, classes)

    def forward(self, ids, mask):
        h = torch.relu(self.proj(self.emb(ids)))
        h = (h * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
        return self.out(h)


def make_batch(lengths):
    longest = max(lengths)
    ids = torch.zeros(len(lengths), longest, dtype=torch.long)
    mask = torch.zeros(len(lengths), longest)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.randint(1, 100, (n,))
        mask[i, :n] = 1.0
    return ids, mask


model = Classifier()
classify = torch.compile(model)
batches = [[5, 9, 7, 12], [3, 4, 6, 4], [17, 2, 8, 11], [9, 9, 9, 9], [20, 5, 13, 7]]
with torch.no_grad():
    for lengths in batches:
        ids, mask = make_batch(lengths)
        logits = classify(ids, mask)
        print(max(lengths), logits.argmax(-1).tolist())
_truth.write()

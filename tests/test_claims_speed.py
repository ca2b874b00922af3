"""The claims' evidence in seconds: the vectorised draws give what a straightforward draw-by-draw computation
gives, in few large chunks, and the disk cache (medibio.results.evidence_cache) returns the same evidence
without computing it again, and computes it again whenever an input changed."""

from __future__ import annotations

import numpy as np
import pytest

from medibio.core import workers
from medibio.core.errors import InputFormatError
from medibio.results import evidence_cache
from medibio.results import significance as S
from medibio.tasks import bootstrap as B
from medibio.tasks import units as U
from medibio.tasks.metrics import MetricInputError
from medibio.tasks.units import UnitStats, score_from_sums, unit_stats


def _ner_stats(n_units: int, runs: int, seed: int, dataset: str = "BC2GM") -> list[UnitStats]:
    rng = np.random.default_rng(seed)
    keys = tuple(f"s{i}" for i in range(n_units))
    return [UnitStats(dataset, "ner_entity_f1", "sentence", keys, ("tp", "fp", "fn"),
                      rng.poisson(0.4, (n_units, 3)).astype(float)) for _ in range(runs)]


def _reference_distribution(stats: list[UnitStats], resamples: int, seed: int) -> np.ndarray:
    """Draw every resample's units at once and sum each run's counts over the drawn units, draw by draw."""
    n = stats[0].n_units
    draws = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    return np.stack([score_from_sums(s.metric, s.counts[draws].sum(axis=1)) for s in stats], axis=1)


@pytest.mark.parametrize(("n_units", "runs", "chunk"), [(7, 1, 10), (50, 3, 333), (301, 4, 2_000_000)])
def test_the_chunked_distribution_is_the_straightforward_one(monkeypatch, n_units, runs, chunk) -> None:
    monkeypatch.setattr(B, "_CHUNK_ELEMENTS", chunk)  # chunks of one resample, of a few, and one chunk
    stats = _ner_stats(n_units, runs, n_units)
    got = B.bootstrap_distribution(stats, 257, seed=11)
    assert np.array_equal(got, _reference_distribution(stats, 257, 11))


def test_a_large_test_set_is_resampled_in_few_chunks(monkeypatch) -> None:
    """BC2GM's 5,000 sentences with 12 runs: the draws come in ten chunks of 100 resamples (they came in 240, each
    a matrix product too small to be fast), and the scores are the straightforward computation's."""
    calls = []
    original = B.bootstrap_weights

    def counting(n_units, resamples, rng, groups=None):
        calls.append(resamples)
        return original(n_units, resamples, rng, groups)

    monkeypatch.setattr(B, "bootstrap_weights", counting)
    stats = _ner_stats(5000, 12, 0)
    got = B.bootstrap_distribution(stats, 999, seed=3)
    assert sum(calls) == 999 and len(calls) == 10
    assert np.array_equal(got, _reference_distribution(stats, 999, 3))


# --------------------------------------------------------------------------- the multi-bootstrap, draw by draw


GOLD = np.linspace(0.0, 4.0, 30)


def _runs(name: str, dataset: str, shifts: list[float], pretraining: tuple[str, ...] = ()) -> S.Runs:
    ids = [f"p{i}" for i in range(len(GOLD))]
    stats = []
    for j, shift in enumerate(shifts):
        rng = np.random.default_rng([sum(map(ord, name + dataset)), j])
        values = GOLD + shift * np.sin(np.arange(len(GOLD)) * (j + 1)) + 0.4 * rng.standard_normal(len(GOLD))
        stats.append(unit_stats("BIOSSES", list(GOLD), list(values), ids))
    stats = [UnitStats(dataset, s.metric, s.unit, s.keys, s.columns, s.counts) for s in stats]
    return S.Runs(name, dataset, tuple(range(1, len(shifts) + 1)), (), frozenset(ids), tuple(stats), pretraining)


def _reference_multi_bootstrap(pairs, statistics, resamples: int, seed: int) -> dict[str, np.ndarray]:
    """The multi-bootstrap written out one draw at a time: the same random numbers (drawn in the same order
    and shapes), no weight matrices, no matrix products."""
    labels = [sorted({x for p in pairs for x in p[i].pretraining}) or [""] for i in (0, 1)]
    pre_rng = np.random.default_rng([seed, 2])
    pre_draws = [pre_rng.integers(0, len(x), size=(resamples, len(x))) for x in labels]
    diffs = {}
    for k, pair in enumerate(pairs):
        n = pair[0].stats[0].n_units
        unit_draws = np.random.default_rng(seed * 1000 + k).integers(0, n, size=(resamples, n))
        seed_rng = np.random.default_rng([seed, k, 1])
        sides = []
        for i, runs in enumerate(pair):
            groups = [labels[i].index(x) for x in runs.pretraining] if runs.pretraining else [0] * len(runs.stats)
            members = [[j for j, g in enumerate(groups) if g == m] for m in range(len(labels[i]))]
            inner = [seed_rng.integers(0, len(ms), size=(resamples, len(ms))) for ms in members]
            values = np.empty(resamples)
            for r in range(resamples):
                scores = [float(score_from_sums(s.metric, s.counts[unit_draws[r]].sum(axis=0))) for s in runs.stats]
                # each drawn pretrained model contributes the mean of its drawn fine-tuning runs
                per_model = [np.mean([scores[members[g][j]] for j in inner[g][r]]) for g in pre_draws[i][r]]
                values[r] = np.mean(per_model)
            sides.append(values)
        diffs[pair[0].dataset] = sides[0] - sides[1]
    return {label: np.mean([diffs[d] for d in chosen], axis=0) for label, chosen in statistics.items()}


def test_the_multi_bootstrap_is_the_draw_by_draw_computation() -> None:
    a1 = _runs("a", "BIOSSES", [0.0, 0.3, 0.1, 0.5], ("m1", "m1", "m2", "m2"))
    b1 = _runs("b", "BIOSSES", [0.2, 0.0, 0.4], ("n1", "n2", "n2"))
    a2 = _runs("a", "BIOSSES-2", [0.1, 0.0, 0.2, 0.3], ("m1", "m2", "m1", "m2"))
    b2 = _runs("b", "BIOSSES-2", [0.0, 0.1, 0.5], ("n2", "n1", "n1"))
    statistics = {"both": ["BIOSSES", "BIOSSES-2"], "first": ["BIOSSES"]}
    found = S.multi_bootstrap([(a1, b1), (a2, b2)], statistics, resamples=199, seed=5)
    expected = _reference_multi_bootstrap([(a1, b1), (a2, b2)], statistics, 199, 5)
    for label in statistics:
        assert np.allclose(found[label].draws, expected[label], rtol=0, atol=1e-9)
        low, high = B.order_interval(expected[label])
        assert (found[label].low, found[label].high) == pytest.approx((low, high), abs=1e-9)


# --------------------------------------------------------------------------- the disk cache


def test_the_cache_gives_the_same_evidence_without_computing_it(tmp_path, monkeypatch) -> None:
    a, b = _runs("a", "BIOSSES", [0.0, 0.3, 0.1]), _runs("b", "BIOSSES", [0.2, 0.0])
    plain = S.multi_bootstrap([(a, b)], resamples=99, seed=2)
    with evidence_cache.stored_in(tmp_path):
        first = S.multi_bootstrap([(a, b)], resamples=99, seed=2)
        assert len(list((tmp_path / evidence_cache.SUBFOLDER).rglob("*.npz"))) == 1
        monkeypatch.setattr(S, "_multi_bootstrap", lambda *args: pytest.fail("computed although cached"))
        again = S.multi_bootstrap([(a, b)], resamples=99, seed=2)
    for found in (first, again):
        assert found["mean"] == plain["mean"] and np.array_equal(found["mean"].draws, plain["mean"].draws)
        assert isinstance(found["mean"].units, tuple) and found["mean"].resampled == plain["mean"].resampled


def test_a_changed_input_or_a_torn_entry_is_computed_again(tmp_path) -> None:
    a, b = _runs("a", "BIOSSES", [0.0, 0.3]), _runs("b", "BIOSSES", [0.2, 0.0])
    moved = _runs("a", "BIOSSES", [0.0, 0.31])
    with evidence_cache.stored_in(tmp_path):
        before = S.multi_bootstrap([(a, b)], resamples=99, seed=2)["mean"]
        after = S.multi_bootstrap([(moved, b)], resamples=99, seed=2)["mean"]
        other_seed = S.multi_bootstrap([(a, b)], resamples=99, seed=3)["mean"]
        entries = sorted((tmp_path / evidence_cache.SUBFOLDER).rglob("*.npz"))
        assert len(entries) == 3 and after.diff != before.diff and other_seed.low != before.low
        for entry in entries:
            entry.write_bytes(b"torn")
        assert S.multi_bootstrap([(a, b)], resamples=99, seed=2)["mean"] == before


def test_unit_statistics_are_cached_by_the_bytes_of_predictions_and_gold(hand_runs, tmp_path, monkeypatch) -> None:
    record = hand_runs.write("base", 1, wrong={1, 2, 5})
    path = record.predictions_file(hand_runs.results)
    S._SCORED.clear()
    plain = S.prediction_stats(path, "BioASQ", hand_runs.data)
    with evidence_cache.stored_in(tmp_path / "cache"):
        S._SCORED.clear()
        first = S.prediction_stats(path, "BioASQ", hand_runs.data)
        S._SCORED.clear()
        monkeypatch.setattr(S, "_score_file", lambda *args: pytest.fail("scored although cached"))
        again = S.prediction_stats(path, "BioASQ", hand_runs.data)
        monkeypatch.undo()
        gold = hand_runs.data / "blurb" / "BioASQ" / "test.tsv"
        gold.write_text(gold.read_text().replace("\tno\n", "\tyes\n", 1))  # another gold: scored again, read again
        S._SCORED.clear()
        regraded = S.prediction_stats(path, "BioASQ", hand_runs.data)
    S._SCORED.clear()
    for stats, ids in (first, again):
        assert ids == plain[1] and stats.keys == plain[0].keys and np.array_equal(stats.counts, plain[0].counts)
        assert stats.score() == plain[0].score()
    assert regraded[0].score() != plain[0].score()


def test_a_cache_that_cannot_be_written_changes_nothing(tmp_path) -> None:
    blocked = tmp_path / "cache"
    blocked.mkdir()
    (blocked / evidence_cache.SUBFOLDER).write_text("a file where the cache's folder would be")
    a, b = _runs("a", "BIOSSES", [0.0, 0.3]), _runs("b", "BIOSSES", [0.2, 0.0])
    with evidence_cache.stored_in(blocked):
        found = S.multi_bootstrap([(a, b)], resamples=99, seed=2)["mean"]
    assert found == S.multi_bootstrap([(a, b)], resamples=99, seed=2)["mean"]


# --------------------------------------------------------------------------- NER spans, all sentences at once


def _seqeval_rows(references: list[list[str]], predictions: list[list[str]], ids: list[str]) -> np.ndarray:
    """(tp, fp, fn) per sentence from seqeval's own ``get_entities``, one sentence at a time."""
    from seqeval.metrics.sequence_labeling import get_entities

    from medibio.tasks.metrics import _to_seqeval

    out = np.zeros((len(references), 3))
    for i, (ref, pred) in enumerate(zip(references, predictions, strict=True)):
        gold = set(get_entities([_to_seqeval(t, i, ids, "gold tags") for t in ref]))
        found = set(get_entities([_to_seqeval(t, i, ids, "predicted tags") for t in pred]))
        out[i] = (len(gold & found), len(found - gold), len(gold - found))
    return out


@pytest.mark.parametrize("vocabulary", [("B", "I", "O"), ("B", "I", "O", "B-X", "I-X", "B-Y", "I-Y", "B-ENT", "I-ENT")])
def test_the_vectorised_entity_counts_are_seqevals(vocabulary) -> None:
    """Random tag sequences (empty sentences, I after O, typed and untyped spans side by side): the spans found
    for all sentences at once are the ones seqeval finds sentence by sentence."""
    rng = np.random.default_rng(len(vocabulary))
    for _ in range(300):
        refs = [[vocabulary[k] for k in rng.integers(0, len(vocabulary), n)] for n in rng.integers(0, 9, 6)]
        preds = [[t if rng.random() < 0.6 else vocabulary[rng.integers(0, len(vocabulary))] for t in ref]
                 for ref in refs]
        ids = [f"s{i}" for i in range(len(refs))]
        assert np.array_equal(U._ner_rows(refs, preds, ids, None), _seqeval_rows(refs, preds, ids))


@pytest.mark.parametrize("bad", ["Q", "B-", "E-X"])
def test_an_unknown_tag_is_named_as_the_metric_names_it(bad) -> None:
    ids = ["a", "b"]
    for refs, preds, what in (([["O", "B"], ["B", bad]], [["O", "B"], ["O", "O"]], "gold tags"),
                              ([["O", "B"], ["O", "O"]], [["O", "B"], ["B", bad]], "predicted tags")):
        with pytest.raises(MetricInputError, match=f"{what} of example 'b' \\(#1\\): unknown NER tag '{bad}'"):
            U._ner_rows(refs, preds, ids, None)


# --------------------------------------------------------------------------- side by side: workers give the same


def test_the_weights_drawn_in_32_bits_are_the_64_bit_draws() -> None:
    for n_units in (1, 7, 5000):
        got = B.bootstrap_weights(n_units, 37, np.random.default_rng(4))
        draws = np.random.default_rng(4).integers(0, n_units, size=(37, n_units))
        assert np.array_equal(got, np.stack([np.bincount(row, minlength=n_units) for row in draws]))


def test_the_datasets_resampled_side_by_side_give_the_same_draws(monkeypatch) -> None:
    pairs = [(_runs("a", "BIOSSES", [0.0, 0.3, 0.1]), _runs("b", "BIOSSES", [0.2, 0.0])),
             (_runs("a", "BIOSSES-2", [0.1, 0.2]), _runs("b", "BIOSSES-2", [0.0, 0.4, 0.3]))]
    statistics = {"mean": ["BIOSSES", "BIOSSES-2"]}
    monkeypatch.setattr(workers, "usable_cores", lambda: 1)
    alone = S._multi_bootstrap(pairs, statistics, 199, 5, 0.95)["mean"]
    monkeypatch.setattr(workers, "usable_cores", lambda: 2)
    apart = S._multi_bootstrap(pairs, statistics, 199, 5, 0.95)["mean"]
    assert apart == alone and np.array_equal(apart.draws, alone.draws)


def test_files_scored_side_by_side_are_the_files_scored_one_by_one(hand_runs, monkeypatch) -> None:
    paths = [hand_runs.write("base", seed, wrong={seed, 2 * seed}).predictions_file(hand_runs.results)
             for seed in (1, 2, 3)]
    S._SCORED.clear()
    alone = [S.prediction_stats(path, "BioASQ", hand_runs.data) for path in paths]
    S._SCORED.clear()
    monkeypatch.setattr(workers, "usable_cores", lambda: 2)
    S.score_side_by_side(((path, "BioASQ") for path in paths), hand_runs.data)
    monkeypatch.setattr(S, "_file_stats", lambda *args: pytest.fail("scored again in this process"))
    for path, (stats, ids) in zip(paths, alone, strict=True):
        got, got_ids = S.prediction_stats(path, "BioASQ", hand_runs.data)
        assert got_ids == ids and got.keys == stats.keys and np.array_equal(got.counts, stats.counts)
    S._SCORED.clear()


def test_a_bad_file_among_those_scored_side_by_side_is_named_as_always(hand_runs, monkeypatch) -> None:
    good, bad = (hand_runs.write("base", seed).predictions_file(hand_runs.results) for seed in (1, 2))
    lines = bad.read_text().splitlines()
    bad.write_text("\n".join([lines[0], lines[1].replace('"prediction"', '"guess"'), *lines[2:]]) + "\n")
    S._SCORED.clear()
    monkeypatch.setattr(workers, "usable_cores", lambda: 2)
    S.score_side_by_side([(good, "BioASQ"), (bad, "BioASQ")], hand_runs.data)
    assert list(S._SCORED) == [S._file_key(good, "BioASQ", hand_runs.data)]  # the good one scored apart
    with pytest.raises(InputFormatError, match=f"{bad.name}:2: expected a JSON object with keys"):
        S.prediction_stats(bad, "BioASQ", hand_runs.data)
    S._SCORED.clear()


def test_files_handed_over_without_waiting_are_collected_when_read(hand_runs, monkeypatch) -> None:
    paths = [hand_runs.write("base", seed, wrong={seed}).predictions_file(hand_runs.results) for seed in (1, 2)]
    S._SCORED.clear()
    alone = [S.prediction_stats(path, "BioASQ", hand_runs.data) for path in paths]
    S._SCORED.clear()
    monkeypatch.setattr(workers, "usable_cores", lambda: 2)
    S.score_side_by_side(((path, "BioASQ") for path in paths), hand_runs.data, wait=False)
    assert set(S._PENDING) == {S._file_key(path, "BioASQ", hand_runs.data) for path in paths} and not S._SCORED
    monkeypatch.setattr(S, "_file_stats", lambda *args: pytest.fail("scored again in this process"))
    for path, (stats, ids) in zip(paths, alone, strict=True):
        got, got_ids = S.prediction_stats(path, "BioASQ", hand_runs.data)
        assert got_ids == ids and np.array_equal(got.counts, stats.counts)
    assert not S._PENDING
    S._SCORED.clear()

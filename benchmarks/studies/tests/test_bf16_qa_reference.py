"""The transformers copy of a kbert QA model in benchmarks/studies/bf16_qa_reference.py computes the same
span logits, so the study compares bf16 against float32 on one model in both frameworks."""

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import kbert  # noqa: E402
from benchmarks.studies.bf16_qa_reference import kbert_logits, torch_logits, torch_model  # noqa: E402


class Windows:
    """What the study reads of `QAFeatures`: three arrays, `inputs()` and a length."""

    def __init__(self, token_ids, segment_ids, padding_mask):
        self.token_ids, self.segment_ids, self.padding_mask = token_ids, segment_ids, padding_mask

    def inputs(self):
        return {"token_ids": self.token_ids, "segment_ids": self.segment_ids, "padding_mask": self.padding_mask}

    def __len__(self):
        return len(self.token_ids)


def test_the_copy_scores_spans_like_kbert(tmp_path):
    encoder = kbert.BertEncoder(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=32)
    model = kbert.BertQuestionAnswerer(encoder)
    rng = np.random.default_rng(0)
    model.output_dense.set_weights([rng.normal(0, 0.5, (16, 2)).astype("float32"),
                                    np.array([0.1, -0.2], "float32")])
    mask = np.array([[1] * 7 + [0] * 3, [1] * 10], "int32")
    windows = Windows(rng.integers(4, 40, (2, 10)).astype("int32") * mask,
                      np.array([[0] * 4 + [1] * 6] * 2, "int32"), mask)
    ours = kbert_logits(model, windows)
    theirs = torch_logits(torch_model(model, tmp_path), windows, autocast=False)
    for a, b in zip(ours, theirs):  # start logits, then end logits
        np.testing.assert_allclose(a[mask == 1], b[mask == 1], atol=1e-4)
        assert np.all(a[mask == 0] < -1e3) and np.all(b[mask == 0] < -1e3)  # padding is never an answer
        assert np.all(np.abs(a[mask == 1]) < 100)

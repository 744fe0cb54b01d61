import numpy as np

import kbert
from kbert.cli.main import main


def test_convert_between_layouts(tmp_path, tiny_vocab_file):
    encoder = kbert.BertEncoder(vocab_size=24, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32, max_position_embeddings=16)
    kbert.save_pretrained(encoder, tmp_path / "kbert", vocabulary=tiny_vocab_file)
    ids = np.array([[2, 5, 6, 3]], "int32")
    inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": 1 + 0 * ids}
    expected = encoder(inputs)["sequence_output"].numpy()
    source = tmp_path / "kbert"
    for fmt in ("google", "hf", "kbert"):
        out = tmp_path / f"as_{fmt}"
        assert main(["convert", str(source), "--out", str(out), "--format", fmt]) == 0
        assert (out / "vocab.txt").read_text() == tiny_vocab_file.read_text()
        got = kbert.load_pretrained(out)(inputs)["sequence_output"].numpy()
        np.testing.assert_allclose(got, expected, atol=1e-6)
        source = out  # chain: kbert -> google -> hf -> kbert

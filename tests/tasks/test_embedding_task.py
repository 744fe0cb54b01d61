"""The embed task: reading pairs, the rows of its batches, scoring, and a model directory that
sentence-transformers loads and encodes with as kbert does."""

import json

import keras
import numpy as np
import pytest

import kbert
import kbert.file_io as file_io
from kbert.constants import POOLING_MODES
from kbert.metrics.embedding import retrieval_metrics, similarity_metrics
from kbert.tasks import EmbeddingTask
from kbert.tasks.embedding import load_sentence_encoder, read_embedding_pairs
from tests.conftest import TINY_VOCAB

WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "a", "good", "bad"]
LONG = " ".join(["the cat sat on the mat"] * 10)  # past the sequence length: truncated


def tiny_encoder() -> kbert.BertEncoder:
    keras.utils.set_random_seed(0)
    return kbert.BertEncoder(vocab_size=len(TINY_VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=32, max_position_embeddings=64)


def pairs(n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"text": " ".join(rng.choice(WORDS, rng.integers(1, 6))), "text_pair": " ".join(rng.choice(WORDS, 3)),
             "negative": " ".join(rng.choice(WORDS, rng.integers(1, 9))), "label": float(rng.uniform(0, 5))}
            for _ in range(n)]


def test_reading_csv_tsv_and_jsonl(tmp_path):
    (tmp_path / "a.tsv").write_text("query\tdoc\tneg\tscore\na cat\tcats purr\tdogs bark\t4.5\n")
    (tmp_path / "a.csv").write_text("query,doc,neg,score\na cat,cats purr,dogs bark,4.5\n")
    (tmp_path / "a.jsonl").write_text(json.dumps({"query": "a cat", "doc": "cats purr", "neg": "dogs bark",
                                                  "score": 4.5}) + "\n")
    for name in ("a.tsv", "a.csv", "a.jsonl"):
        assert read_embedding_pairs(tmp_path / name, text_column="query", text_pair_column="doc",
                                    negative_column="neg", label_column="score") == [
            {"text": "a cat", "text_pair": "cats purr", "label": 4.5, "negative": "dogs bark"}]
    # The task reads no score for training and no negative for evaluation (the other file need not have them).
    task = EmbeddingTask(text_column="query", text_pair_column="doc", negative_column="neg", label_column="score")
    assert "negative" in task.read_examples(tmp_path / "a.tsv")[0]
    assert task.read_examples(tmp_path / "a.tsv")[0]["label"] is None
    assert task.read_examples(tmp_path / "a.tsv", split="validation")[0] == {
        "text": "a cat", "text_pair": "cats purr", "label": 4.5}


def test_reading_errors_name_the_problem(tmp_path):
    (tmp_path / "one.tsv").write_text("text\tlabel\na cat\t1\n")
    with pytest.raises(ValueError, match="no column 'text_pair' in the header"):
        read_embedding_pairs(tmp_path / "one.tsv")
    (tmp_path / "bad.tsv").write_text("text\ttext_pair\tlabel\na cat\ta dog\thigh\n")
    with pytest.raises(ValueError, match=r"bad.tsv:2: label 'high' is not a number"):
        read_embedding_pairs(tmp_path / "bad.tsv", label_column="label")


def test_reading_tfds_pairs_and_scores():
    tfds = pytest.importorskip("tensorflow_datasets")
    with tfds.testing.mock_data(num_examples=3):
        sts = read_embedding_pairs("tfds:glue/stsb:validation", label_column="label")
        assert len(sts) == 3 and all(isinstance(e["label"], float) and e["text_pair"] for e in sts)
        with pytest.raises(ValueError, match="no second text"):
            read_embedding_pairs("tfds:glue/sst2")
        with pytest.raises(ValueError, match="score .* is not a number"):
            read_embedding_pairs("tfds:glue/mrpc", label_column="label")


@pytest.mark.parametrize("group_by_length", [True, False])
def test_training_batches_keep_each_examples_rows_together(group_by_length):
    examples = pairs(70)
    task = EmbeddingTask(negative_column="negative")
    tokenizer = kbert.BertTokenizer(TINY_VOCAB)
    data = task.dataset(examples, kbert.BertPreprocessor(tokenizer, 16, padding="dynamic"), 8, training=True,
                        group_by_length=group_by_length)
    batches = list(data.dataset)
    assert data.size == 64 and len(batches) == 8  # full batches only: 70 // 8
    ids = tokenizer.tokenize([e[c] for e in examples for c in task.columns]).to_list()
    want = {tuple(tuple(ids[3 * i + role]) for role in range(3)) for i in range(len(examples))}
    seen = []
    for inputs, roles in batches:
        assert roles.numpy().tolist() == [0, 1, 2] * 8
        rows = [tuple(row[mask][1:-1].tolist()) for row, mask in zip(inputs["token_ids"].numpy(),
                                                                      inputs["padding_mask"].numpy())]
        seen += [tuple(rows[i:i + 3]) for i in range(0, 24, 3)]  # each group: one example's texts, packed alone
    assert set(seen) <= want and len(set(seen)) == 64


def test_fewer_examples_than_a_batch_is_an_error():
    tokenizer = kbert.BertTokenizer(TINY_VOCAB)
    with pytest.raises(ValueError, match="3 examples are fewer than one batch of 8"):
        EmbeddingTask().dataset(pairs(3), kbert.BertPreprocessor(tokenizer, 16), 8, training=True)


def test_evaluation_scores_sts_with_a_label_column_and_retrieval_without():
    model = EmbeddingTask().build_model(tiny_encoder())
    preprocessor = kbert.BertPreprocessor(kbert.BertTokenizer(TINY_VOCAB), 16, padding="dynamic")
    examples = pairs(20)
    first = model.predict_on_batch(preprocessor([e["text"] for e in examples]))
    second = model.predict_on_batch(preprocessor([e["text_pair"] for e in examples]))
    sts = EmbeddingTask(label_column="score").evaluate(model, examples, preprocessor, batch_size=6, verbose=0)
    want = similarity_metrics(first, second, [e["label"] for e in examples])
    assert sts.keys() == {"pearson", "spearman", "num_examples"}
    assert sts["spearman"] == pytest.approx(want["spearman"], abs=1e-6)
    assert sts["pearson"] == pytest.approx(want["pearson"], abs=1e-5)
    retrieval = EmbeddingTask().evaluate(model, examples, preprocessor, batch_size=6, verbose=0)
    for name, value in retrieval_metrics(first, second).items():
        assert retrieval[name] == pytest.approx(value, abs=1e-6), name


def test_the_model_and_the_task_must_agree():
    encoder = tiny_encoder()
    with pytest.raises(ValueError, match="pools with 'max' .* but the task says 'mean'"):
        EmbeddingTask().check_model(EmbeddingTask(pooling="max").build_model(encoder))
    with pytest.raises(ValueError, match="nothing to train"):
        EmbeddingTask().build_model(encoder, feature_based=True)


def test_a_model_directory_at_a_url(tmp_path):
    """save_model writes the sentence-transformers files through file_io too; load_sentence_encoder reads it."""
    task = EmbeddingTask(pooling="cls", normalize=False)
    model = task.build_model(tiny_encoder())
    tokenizer = kbert.BertTokenizer(TINY_VOCAB)
    directory = "ram://embed_model"
    kbert.save_model(model, directory, tokenizer, task, sequence_length=16)
    for name in ("modules.json", "1_Pooling/config.json", "sentence_bert_config.json", "config.json",
                 "model.safetensors", "vocab.txt"):
        assert file_io.isfile(file_io.join(directory, name)), name
    again = load_sentence_encoder(directory)
    assert again.task == task and again.preprocessor.sequence_length == 16
    texts = ["the cat sat", LONG]
    np.testing.assert_allclose(again.predict_on_batch(again.preprocessor(texts)),
                               model.predict_on_batch(again.preprocessor(texts)), atol=1e-6)
    other = kbert.BertClassifier(tiny_encoder(), 2)
    kbert.save_model(other, "ram://classifier", tokenizer, kbert.ClassificationTask(labels=["a", "b"]))
    with pytest.raises(ValueError, match="holds a classify model, not a sentence embedding model"):
        load_sentence_encoder("ram://classifier")


@pytest.mark.slow
@pytest.mark.parametrize("pooling,normalize", [(mode, mode != "max") for mode in POOLING_MODES])
def test_sentence_transformers_loads_the_model_directory(pooling, normalize, tmp_path):
    pytest.importorskip("sentence_transformers")
    from sentence_transformers import SentenceTransformer

    task = EmbeddingTask(pooling=pooling, normalize=normalize)
    model = task.build_model(tiny_encoder())
    tokenizer = kbert.BertTokenizer(TINY_VOCAB)
    kbert.save_model(model, tmp_path, tokenizer, task, sequence_length=12)
    texts = ["The cats sat on the mat!", "a dog", "", LONG, "un affable dogs running , good ?"]
    reference = SentenceTransformer(str(tmp_path), device="cpu").encode(texts)
    ours = model.predict_on_batch(kbert.BertPreprocessor(tokenizer, 12)(texts))
    np.testing.assert_allclose(ours, reference, atol=1e-5)
    assert np.abs(reference - reference[0]).max() > 1e-4  # different texts, different vectors


@pytest.mark.slow
def test_a_cased_tokenizer_under_do_lower_case(tmp_path):
    """sentence-transformers lower-cases first where sentence_bert_config.json says so; kbert's sentence model
    does the same with the directory's cased tokenizer."""
    pytest.importorskip("sentence_transformers")
    from sentence_transformers import SentenceTransformer

    task = EmbeddingTask()
    model = task.build_model(tiny_encoder())
    kbert.save_model(model, tmp_path, kbert.BertTokenizer(TINY_VOCAB, lowercase=False), task, sequence_length=12)
    (tmp_path / "task.json").unlink()  # read as a sentence-transformers directory
    config = json.loads((tmp_path / "sentence_bert_config.json").read_text())
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({**config, "do_lower_case": True}))
    texts = ["The CAT sat on the Mat", "the cat sat on the mat"]
    sentence_model = load_sentence_encoder(tmp_path)
    assert sentence_model.tokenizer.lowercase and not sentence_model.tokenizer.strip_accents
    ours = sentence_model.predict_on_batch(sentence_model.preprocessor(texts))
    np.testing.assert_allclose(ours, SentenceTransformer(str(tmp_path), device="cpu").encode(texts), atol=1e-5)
    np.testing.assert_allclose(ours[0], ours[1], atol=1e-6)  # lower-cased: the same ids

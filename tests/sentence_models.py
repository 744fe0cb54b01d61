"""Tiny random sentence-transformers models in the layouts of e5, bge and gte and with Dense projections, each
saved by `SentenceTransformer.save` around a random 2-layer Hugging Face `BertModel` with a WordPiece vocab.txt."""

from __future__ import annotations

import pathlib

import pytest

from tests.conftest import TINY_VOCAB

VOCAB = TINY_VOCAB + ["query", "passage", ":", "represent", "this", "sentence", "for", "searching", "relevant",
                      "passages", "search", "##ed"]
HIDDEN = 32
# name -> (pooling mode, Dense modules [(out_features, torch activation class name, bias)], Normalize, prompts,
# default prompt name, max_seq_length)
LAYOUTS = {
    # e5: mean pooling, Normalize, a prompt for queries and one for passages.
    "e5": ("mean", [], True, {"query": "query: ", "passage": "passage: "}, None, 16),
    # bge: [CLS] pooling, Normalize, an instruction prompt for queries (documents go in bare).
    "bge": ("cls", [], True, {"query": "Represent this sentence for searching relevant passages: ", "document": ""},
            None, 16),
    # gte: mean pooling alone, no prompts.
    "gte": ("mean", [], False, {}, None, 16),
    # A default prompt: applied when none is named.
    "default_prompt": ("mean", [], True, {"query": "query: ", "passage": "passage: "}, "query", 16),
    # Dense projections: tanh to a smaller width with a bias, then a linear map without one, then Normalize.
    "dense": ("mean", [(12, "Tanh", True), (8, "Identity", False)], True, {"query": "query: "}, None, 16),
}


def sentence_model_dir(directory: pathlib.Path, layout: str, seed: int = 0) -> pathlib.Path:
    """Writes the model of `LAYOUTS[layout]` into `directory` with `SentenceTransformer.save`."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("sentence_transformers")
    from sentence_transformers.base.modules import Dense, Normalize, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    pooling, dense, normalize, prompts, default, length = LAYOUTS[layout]
    torch.manual_seed(seed)
    bert = directory.parent / f"{directory.name}_bert"
    bert.mkdir(parents=True, exist_ok=True)
    (bert / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    transformers.BertTokenizer(str(bert / "vocab.txt"), do_lower_case=True).save_pretrained(str(bert))
    config = transformers.BertConfig(vocab_size=len(VOCAB), hidden_size=HIDDEN, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    transformers.BertModel(config).save_pretrained(str(bert))
    modules = [Transformer(str(bert), max_seq_length=length), Pooling(HIDDEN, pooling_mode=pooling)]
    width = HIDDEN
    for units, activation, bias in dense:
        modules.append(Dense(width, units, bias=bias, activation_function=getattr(torch.nn, activation)()))
        width = units
    if normalize:
        modules.append(Normalize())
    model = st.SentenceTransformer(modules=modules, prompts=prompts, default_prompt_name=default, device="cpu")
    model.save(str(directory))
    # transformers 5 saves tokenizer.json alone; the models as shipped (e5, bge, gte) also hold vocab.txt.
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return directory

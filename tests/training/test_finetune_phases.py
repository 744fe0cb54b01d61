"""`kbert finetune` reports the seconds of its phases, and evaluation traces its forward pass once."""

import json

import numpy as np

import kbert
from kbert.cli.main import main
from kbert.tasks import ClassificationTask
from kbert.tasks.base import inference_function
from kbert.tasks.serving import MODEL_INPUTS
from kbert.text import BertPreprocessor
from kbert.training.finetune import PHASES, TIMINGS_FILE, FinetuneConfig, finetune, format_phases
from tests.training.conftest import keyword_rows, write_tsv


def test_phases_are_reported_in_order_and_written(tmp_path, tiny_init, capsys):
    train = write_tsv(tmp_path / "train.tsv", ["sentence", "label"], keyword_rows(48, 0))
    dev = write_tsv(tmp_path / "dev.tsv", ["sentence", "label"], keyword_rows(20, 1))
    out = tmp_path / "out"
    assert main(["finetune", "classify", "--init", str(tiny_init), "--train", str(train), "--validation", str(dev),
                 "--text-column", "sentence", "--sequence-length", "16", "--epochs", "2", "--batch-size", "16",
                 "--out", str(out), "--verbose", "0"]) == 0
    written = json.loads((out / TIMINGS_FILE).read_text())["phase_seconds"]
    assert list(written) == list(PHASES) == ["load", "first_step", "train", "evaluate", "save"]
    assert all(seconds > 0 for seconds in written.values()), written
    line = [text for text in capsys.readouterr().out.splitlines() if text.startswith("phases (s): ")]
    assert line == [format_phases(written)]
    printed = [part.rsplit(" ", 1) for part in line[0].removeprefix("phases (s): ").split(", ")]
    assert [name for name, _ in printed] == ["load", "first step", "train", "evaluate", "save"]
    assert [float(value) for _, value in printed] == [round(written[name], 1) for name in PHASES]


def test_phase_seconds_add_up_to_the_call(tmp_path, tiny_init):
    import time

    train = write_tsv(tmp_path / "train.tsv", ["text", "label"], keyword_rows(32, 2))
    began = time.perf_counter()
    result = finetune(ClassificationTask(), FinetuneConfig(train=str(train), out=str(tmp_path / "out"),
                                                           init=str(tiny_init), epochs=1, batch_size=16,
                                                           sequence_length=16, verbose=0))
    took = time.perf_counter() - began
    phases = result["phase_seconds"]
    assert list(phases) == list(PHASES) and phases["evaluate"] < phases["first_step"]  # no validation data
    assert phases["train"] + phases["first_step"] <= result["train_seconds"] + 1e-6
    assert sum(phases.values()) <= took


def test_evaluation_traces_its_forward_pass_once(tmp_path, tiny_init):
    rows = keyword_rows(45, 3)  # batches of 16, 16 and 13 rows, each padded to its own length
    examples = [{"text": text, "text_pair": None, "label": label} for text, label in rows]
    task = ClassificationTask(labels=["0", "1"])
    model = task.build_model(kbert.load_pretrained(tiny_init))
    preprocessor = BertPreprocessor(kbert.load_tokenizer(tiny_init), 32, padding="dynamic")
    first = task.evaluate(model, examples, preprocessor, batch_size=16, verbose=0)
    second = task.evaluate(model, examples[:30], preprocessor, batch_size=8, verbose=0)  # a second evaluation
    spec = task.dataset(examples, preprocessor, 16, training=False).dataset.element_spec
    forward = inference_function(model, {k: v for k, v in spec.items() if k in MODEL_INPUTS})
    assert forward.experimental_get_tracing_count() == 1
    assert first["num_examples"] == 45 and second["num_examples"] == 30
    # The traced function is the model's inference: the same logits as an eager call.
    batch = next(iter(task.dataset(examples, preprocessor, 16, training=False).dataset))
    inputs = {k: batch[k] for k in MODEL_INPUTS}
    np.testing.assert_allclose(forward(inputs).numpy(), model(inputs, training=False).numpy(), atol=1e-6)

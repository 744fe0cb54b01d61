"""Task data: raw examples from local files and tfds, label vocabularies.

`read_classification`, `read_tagging` and `read_squad` take a file path or `tfds:NAME[:SPLIT]` and
return lists of plain dicts (tokenization happens in the tf.data pipelines).
"""

from kbert.data.conll import detect_tagging_scheme, iob1_to_iob2, read_conll
from kbert.data.local_files import read_classification_file
from kbert.data.squad_json import check_answers, read_squad_json, squad_examples
from kbert.data.task_data import (
    LABELS_FILE,
    DataSource,
    build_label_vocabulary,
    load_labels,
    parse_source,
    read_classification,
    read_squad,
    read_tagging,
    save_labels,
    source_label_names,
)
from kbert.data.tfds_tasks import (
    CLASSIFICATION_COLUMNS,
    read_tfds_classification,
    read_tfds_squad,
    read_tfds_tagging,
    tfds_label_names,
)

__all__ = [
    "CLASSIFICATION_COLUMNS",
    "LABELS_FILE",
    "DataSource",
    "build_label_vocabulary",
    "check_answers",
    "detect_tagging_scheme",
    "iob1_to_iob2",
    "load_labels",
    "parse_source",
    "read_classification",
    "read_classification_file",
    "read_conll",
    "read_squad",
    "read_squad_json",
    "read_tagging",
    "read_tfds_classification",
    "read_tfds_squad",
    "read_tfds_tagging",
    "save_labels",
    "source_label_names",
    "squad_examples",
    "tfds_label_names",
]

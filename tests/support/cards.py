"""A real paste the card tests of every surface share: a burn-tensor check whose card is titled by its reason
and shows the pasted values."""

from __future__ import annotations

RESHAPE_PASTE = (
    "thread 'main' panicked at /home/ana/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/"
    "burn-tensor-0.19.0/src/tensor/api/check.rs:1495:17:\n"
    "=== Tensor Operation Error ===\n  Operation: 'Reshape'\n  Reason:\n"
    "    1. The given shape doesn't have the same number of elements as the current tensor. "
    "Current shape: [2, 3], target shape: [4, 2]. \n\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
)
RESHAPE_TITLE = "Reshape: the given shape doesn't have the same number of elements as the current tensor"
RESHAPE_VALUES = "Current shape: [2, 3], target shape: [4, 2]."

# A paste whose record (written for it, embedded) lists the public issues where it was reported.
REPORTED_PASTE = (
    "thread 'main' panicked at crates/burn-ir/src/handle.rs:97:9:\n"
    "Should have handle for tensor TensorId { value: 12 }\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
)
REPORTED_URL = "https://github.com/tracel-ai/burn/issues/4950"
REPORTED_LABEL = "tracel-ai/burn#4950"

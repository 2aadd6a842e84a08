"""The default model on ONNX Runtime: no torch at query time, and faster than torch on a CPU.

The bundled MiniLM is exported once (torch and onnx are needed for that step only) to a graph
that ends in the model's own pooling (mean over the attention mask, then L2 normalisation, as
sentence-transformers computes it). ONNX Runtime's transformer optimiser then fuses each layer's
attention, its residual additions with their LayerNorms and the embeddings into single kernels
(about 1.2-1.3x the unfused graph on a CPU; the GEMMs are the same, the memory traffic between
them is not), ONNX Runtime's graph optimisations are applied, and the optimised graph is kept
in the user's cache: $XDG_CACHE_HOME/sieve/onnx (else ~/.cache/...), in a
folder keyed by the model files' checksum, so a changed model is exported again. The graph is
written under a temporary name and renamed into place; a JSON sidecar written last records its
size and CRC32, and a graph that does not match it (a partial or damaged file) is rebuilt.

Vectors agree with sentence-transformers' float32 ones to a cosine of at least 0.999 per text
(tests/dense/test_onnx.py), so embeddings made by either backend are queried by either: the
backend is recorded beside the model, not a reason to refuse.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import stat
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from sieve.dense.models import DenseUnavailableError, model_files, model_fingerprint, model_name
from sieve.engine.format import storage

FORMAT = 2  # bump when the exported graph changes (inputs, pooling, fusion): old ones are ignored
# int8: dynamic quantisation of the fused graph's MatMul and Attention weights, per channel (per
# tensor loses too much: cosine 0.94 with float32); about 1.9x sentence-transformers on a CPU with
# VNNI, cosine about 0.99 on pages (0.975 on a one-letter text). Opt-in.
PRECISIONS = ("fp32", "int8")
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Word pieces per run of the graph: 4 texts of 256, 32 of 32. Small runs keep a layer's
# activations in the CPU's caches: against sentence-transformers float32 (batches of 32), man
# pages went from 1.14x (runs of 32 texts) to 1.30x, 128-word passages from 1.32x to 1.64x;
# budgets of 512 and 2,048 pieces were slower than 1,024 (2 cores, AVX-512, 2 MB L2 a core).
RUN_TOKENS = 1024


def available() -> bool:
    """Whether ONNX Runtime and the tokenizers package are installed (no import of either)."""
    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "tokenizers"))


def cache_root() -> Path:
    """Where exported models are kept: $XDG_CACHE_HOME/sieve/onnx, else ~/.cache/sieve/onnx."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sieve" / "onnx"


def _folder(model: str, files: str) -> Path:
    import onnxruntime

    # The optimised graph is written by one ONNX Runtime version and read back by it.
    label = Path(model).name or "model"
    return cache_root() / f"{label}-{files}-f{FORMAT}-ort{onnxruntime.__version__}"


def _file_crc(path: Path) -> tuple[int, int]:
    crc = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            crc = storage.crc32(chunk, crc)
        return os.fstat(fh.fileno()).st_size, crc


def _private(folder: Path) -> None:
    """Refuse a cache folder someone else could have written: a graph planted there (with a seal
    that matches it) would be loaded as the model. Made private (0700) when sieve makes it; one
    that exists must be the user's own and writable by no one else (a shared XDG_CACHE_HOME)."""
    folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder.mkdir(mode=0o700, exist_ok=True)
    for where in (folder, folder.parent):
        st = where.lstat()
        if st.st_uid != os.getuid() or st.st_mode & 0o022 or not stat.S_ISDIR(st.st_mode):
            raise DenseUnavailableError(
                f"the ONNX model cache {where} belongs to another user or others can write it; "
                "set XDG_CACHE_HOME to a folder of your own (or use --encoder torch)"
            )


def _intact(graph: Path) -> bool:
    """Whether `graph` is complete: its size and CRC32 are those its sidecar recorded."""
    try:
        seal = json.loads(graph.with_suffix(".json").read_text())
        size, crc = _file_crc(graph)
    except (OSError, ValueError):
        return False
    return isinstance(seal, dict) and seal.get("size") == size and seal.get("crc32") == crc


def _export(root: Path, out: Path) -> None:
    """The model in `root`, with mean pooling and normalisation, as an ONNX graph at `out`."""
    try:
        import torch
        from transformers import AutoModel
    except ImportError:
        raise DenseUnavailableError(
            "exporting the embedding model to ONNX needs "
            "torch and transformers once (the dense extra)"
        ) from None
    if importlib.util.find_spec("onnx") is None:
        raise DenseUnavailableError(
            "exporting the embedding model to ONNX needs the onnx package "
            "(the dense extra): pip install onnx"
        )

    class Pooled(torch.nn.Module):
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )[0]
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2.0, dim=1)

    # Eager attention exports as MatMul/Softmax, a pattern the optimiser fuses (_fuse); the SDPA
    # export (NaN guards, Where) is fused by nothing and ran at torch's speed.
    bert = AutoModel.from_pretrained(str(root), attn_implementation="eager").eval()
    sample = torch.ones(2, 8, dtype=torch.long)
    axes = {name: {0: "batch", 1: "tokens"} for name in _INPUTS}
    with torch.no_grad(), warnings.catch_warnings():
        # The exporter's notes on tracing are not the user's concern.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Pooled(bert).eval(),
            (sample, sample, torch.zeros_like(sample)),
            str(out),
            dynamo=False,
            input_names=list(_INPUTS),
            output_names=["embedding"],
            dynamic_axes={**axes, "embedding": {0: "batch"}},
            opset_version=17,
        )


def _fuse(root: Path, raw: Path, out: Path) -> Path:
    """`raw` with each BERT layer's attention, skip LayerNorms, GELU and the embeddings fused by
    ONNX Runtime's transformer optimiser, written to `out`; `raw` itself where the optimiser is
    missing or recognises no attention (a model of another shape): slower, the same vectors."""
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        config = json.loads((root / "config.json").read_text())
        heads, hidden = int(config["num_attention_heads"]), int(config["hidden_size"])
    except (ImportError, OSError, ValueError, KeyError):
        return raw
    logging.disable(logging.WARNING)  # the optimiser reports every pattern it did not find
    try:
        # opt_level 0: its own fusions only; the runtime's pass in exported() follows.
        fused = optimize_model(
            str(raw), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=0
        )
    finally:
        logging.disable(logging.NOTSET)
    if not fused.get_fused_operator_statistics().get("Attention"):
        return raw
    fused.save_model_to_file(str(out))
    return out


def exported(model: str, precision: str = "fp32") -> Path:
    """The optimised ONNX graph of `model` at `precision`, exported into the cache on first use
    (and again whenever the cached one is missing, partial or damaged, or the model changed)."""
    import onnxruntime as ort

    root, files = model_files(model), model_fingerprint(model)
    if root is None or files is None:
        raise DenseUnavailableError(f"the files of embedding model {model!r} are not installed")
    folder = _folder(model, files)
    _private(folder)
    graph = folder / f"model.{precision}.onnx"
    if _intact(graph):
        return graph
    # Unique temporary names: two processes exporting at once each finish their own, and the
    # later rename wins with a graph as good as the earlier.
    with tempfile.TemporaryDirectory(dir=folder, prefix=".export-") as tmp:
        raw, optimised = Path(tmp) / "raw.onnx", Path(tmp) / "optimised.onnx"
        _export(root, raw)
        raw = _fuse(root, raw, Path(tmp) / "fused.onnx")
        if precision == "int8":
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantised = Path(tmp) / "int8.onnx"
            logging.disable(logging.WARNING)  # its advice to pre-process is for static quantisation
            try:
                quantize_dynamic(
                    str(raw),
                    str(quantised),
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    op_types_to_quantize=["MatMul", "Attention"],
                    # the fused kernels are outside ONNX's type inference; they compute in float
                    extra_options={"DefaultTensorType": 1},  # onnx.TensorProto.FLOAT
                )
            finally:
                logging.disable(logging.NOTSET)
            raw = quantised
        options = ort.SessionOptions()
        # EXTENDED, not ALL: the saved graph then holds no layout tied to this CPU.
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = str(optimised)
        ort.InferenceSession(str(raw), options, providers=["CPUExecutionProvider"])
        with open(optimised, "rb") as fh:
            os.fsync(fh.fileno())
        size, crc = _file_crc(optimised)
        # Nothing vouches for the graph while it is replaced.
        graph.with_suffix(".json").unlink(missing_ok=True)
        os.replace(optimised, graph)
        seal = Path(tmp) / "seal.json"
        seal.write_text(json.dumps({"size": size, "crc32": crc, "model": model, "files": files}))
        os.replace(seal, graph.with_suffix(".json"))
        storage.fsync_dir(folder)
    return graph


def _max_tokens(root: Path) -> int:
    try:
        return int(json.loads((root / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError):
        return 256


class OnnxEncoder:
    """The default model's encoder on ONNX Runtime: its tokenizer (tokenizers), the exported graph,
    texts sorted by length into batches so that little padding is computed."""

    def __init__(self, model: str, threads: int | None = None, precision: str = "fp32") -> None:
        if precision not in PRECISIONS:
            raise DenseUnavailableError(
                f"unknown ONNX precision {precision!r}; known: {', '.join(PRECISIONS)}"
            )
        if not available():
            raise DenseUnavailableError(
                "the onnx backend needs onnxruntime and tokenizers: "
                "pip install onnxruntime tokenizers"
            )
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.name = model_name(model)
        self.backend = f"onnxruntime-{precision}"
        root = model_files(self.name)
        if root is None or not (root / "tokenizer.json").is_file():
            raise DenseUnavailableError(f"embedding model {self.name!r} has no tokenizer.json")
        self._tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(_max_tokens(root))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        graph = exported(self.name, precision)
        try:
            self._session = ort.InferenceSession(
                str(graph), options, providers=["CPUExecutionProvider"]
            )
        except Exception:
            # Sealed yet unreadable (a runtime that wrote it differently): export it again.
            graph.with_suffix(".json").unlink(missing_ok=True)
            self._session = ort.InferenceSession(
                str(exported(self.name, precision)), options, providers=["CPUExecutionProvider"]
            )
        self.dim = int(self._session.get_outputs()[0].shape[1] or self.encode(["a"]).shape[1])

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Unit-length float32 vectors of `texts`, in their order: longest first, at most
        `batch_size` texts and about RUN_TOKENS word pieces per run."""
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        order = np.argsort(-lengths, kind="stable")
        out: np.ndarray | None = None
        a = 0
        while a < len(order):
            width = int(lengths[order[a]])
            batch = order[a : a + max(1, min(batch_size, RUN_TOKENS // max(width, 1)))]
            a += len(batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for i, j in enumerate(batch.tolist()):
                e = encodings[j]
                ids[i, : len(e.ids)] = e.ids
                mask[i, : len(e.ids)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            vecs = self._session.run(None, feeds)[0]
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
            out[batch] = vecs
        if out is None:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        return out

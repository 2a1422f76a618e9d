"""TurboQuant's KV cache types in llama-cpp-python built on the patched llama.cpp
(scripts/build-python-wheel.sh; docs/llama.cpp.md, "Python").

    from llama_cpp import turboquant
    llm = turboquant.Llama("model.gguf", cache="tq4")   # K and V both tq4
    llm = llama_cpp.Llama("model.gguf", type_k=turboquant.LLAMA_TQ4, type_v=turboquant.LLAMA_TQ4,
                          flash_attn=True)              # the same, by hand

A context the cache cannot serve raises ContextRefused with llama.cpp's one-line reason.
"""
import ctypes

from . import llama_cpp as _c
from .llama import Llama as _Llama

_c._lib.llama_tq_type_from_name.argtypes = [ctypes.c_char_p]
_c._lib.llama_tq_type_from_name.restype = ctypes.c_int
_c._lib.llama_tq_type_names.argtypes = []
_c._lib.llama_tq_type_names.restype = ctypes.c_char_p

NAMES = tuple(_c._lib.llama_tq_type_names().decode().split(", "))
_NO_TYPE = _c._lib.llama_tq_type_from_name(b"")  # GGML_TYPE_COUNT: not a cache type


def cache_type(name):
    """The ggml type number of the tq cache type `name` ("tq4"), for type_k / type_v."""
    t = _c._lib.llama_tq_type_from_name(name.encode())
    if t == _NO_TYPE:
        raise ValueError(f"'{name}' is not a TurboQuant cache type (those are {', '.join(NAMES)})")
    return t


LLAMA_TQ2, LLAMA_TQ3, LLAMA_TQ3_5, LLAMA_TQ4, LLAMA_TQ5, LLAMA_TQ6, LLAMA_TQ7, LLAMA_TQ8 = (
    cache_type(n) for n in ("tq2", "tq3", "tq3.5", "tq4", "tq5", "tq6", "tq7", "tq8"))


class ContextRefused(ValueError):
    """llama.cpp made no context; the message is its reason (the tq cache's line, if any)."""


def Llama(model_path, *args, cache="tq4", cache_v=None, **kwargs):
    """llama_cpp.Llama with K cache type `cache` and V `cache_v` (default: the same), each a
    tq name ("tq4") or a ggml type number, and flash attention on (the tq cache needs it).
    Raises ContextRefused with llama.cpp's reason where it makes no context."""
    def number(t):
        return cache_type(t) if isinstance(t, str) else int(t)
    kwargs.setdefault("flash_attn", True)
    kwargs["type_k"], kwargs["type_v"] = number(cache), number(cache if cache_v is None else cache_v)
    errors = []

    @_c.llama_log_callback
    def keep(level, text, user_data):
        line = text.decode("utf-8", "replace").strip()
        if level == 4 and line:  # GGML_LOG_LEVEL_ERROR (ggml.h)
            errors.append(line)

    _c.llama_log_set(keep, ctypes.c_void_p(0))
    try:
        return _Llama(model_path, *args, **kwargs)
    except ValueError as e:
        reasons = [l for l in errors if "tq KV cache: " in l] or errors or [str(e)]
        raise ContextRefused(reasons[-1]) from e
    finally:
        from . import _logger  # llama-cpp-python's own callback again
        _c.llama_log_set(_logger.llama_log_callback, ctypes.c_void_p(0))

"""A small ctypes wrapper of libnib.so: load a model, tokenize, decode, logits.

    from nib_ctypes import Nib
    nib = Nib("build/libnib.so")
    m = nib.load("models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ids = m.tokenize("The capital of France is")     # model's BOS rule, special text parsed
    ctx = m.context(n_ctx=2048, n_threads=2)
    rows = ctx.decode(ids, all_logits=True)          # (len(ids), n_vocab) float32
    last = ctx.logits()                              # (n_vocab,) of the last token
    ctx.truncate(0)
    ctx.close(); m.close()

Errors from the library raise NibError with nib_error's message.
"""
import ctypes
import os

import numpy as np


class NibError(RuntimeError):
    pass


class _Error(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("msg", ctypes.c_char * 512)]

    def text(self):
        return self.msg.decode("utf-8", errors="replace")


class _CtxParams(ctypes.Structure):
    _fields_ = [("n_ctx", ctypes.c_int32), ("n_batch", ctypes.c_int32), ("n_threads", ctypes.c_int),
                ("kv_f32", ctypes.c_bool), ("device", ctypes.c_int)]


# nib_model begins {nib_gguf *gguf; nib_hparams hp {char arch_name[32]; int32_t n_vocab; ...}}
class _ModelHead(ctypes.Structure):
    _fields_ = [("gguf", ctypes.c_void_p), ("arch_name", ctypes.c_char * 32), ("n_vocab", ctypes.c_int32)]


class Nib:
    def __init__(self, lib_path):
        self.lib = lib = ctypes.CDLL(os.path.abspath(lib_path))
        self.libc = ctypes.CDLL(None)
        vp, ep, i32, i64 = ctypes.c_void_p, ctypes.POINTER(_Error), ctypes.c_int32, ctypes.c_int64
        fp = ctypes.POINTER(ctypes.c_float)
        sig = {
            "nib_model_load": ([ctypes.c_char_p, ep], vp),
            "nib_model_free": ([vp], None),
            "nib_ctx_new": ([vp, ctypes.POINTER(_CtxParams), ep], vp),
            "nib_ctx_free": ([vp], None),
            "nib_ctx_decode": ([vp, ctypes.POINTER(i32), i64, fp, ep], ctypes.c_int),
            "nib_ctx_logits": ([vp], fp),
            "nib_ctx_truncate": ([vp, i32], None),
            "nib_ctx_pos": ([vp], i32),
            "nib_ctx_n_ctx": ([vp], i32),
            "nib_tokenizer_load": ([vp, ep], vp),
            "nib_tokenizer_free": ([vp], None),
            "nib_tokenizer_n_vocab": ([vp], i32),
            "nib_tokenizer_bos": ([vp], i32),
            "nib_tokenizer_eos": ([vp], i32),
            "nib_tokenizer_adds_bos": ([vp], ctypes.c_bool),
            "nib_tokenizer_is_eog": ([vp, i32], ctypes.c_bool),
            "nib_tokenize": ([vp, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_bool, ctypes.c_bool,
                              ctypes.POINTER(ctypes.POINTER(i32)), ctypes.POINTER(i64), ep], ctypes.c_int),
            "nib_token_to_piece": ([vp, i32, ctypes.c_bool, ctypes.c_char_p, ctypes.c_size_t], ctypes.c_size_t),
        }
        missing = []
        for name, (args, res) in sig.items():
            try:
                f = getattr(lib, name)
            except AttributeError:
                missing.append(name)
                continue
            f.argtypes = args
            f.restype = res
        self.missing = missing
        self.libc.free.argtypes = [vp]
        self.libc.free.restype = None

    def require(self, *names):
        lack = [n for n in names if n in self.missing]
        if lack:
            raise NibError("libnib.so lacks " + ", ".join(lack))

    def load(self, path):
        self.require("nib_model_load", "nib_model_free", "nib_tokenizer_load")
        return Model(self, path)


class Model:
    def __init__(self, nib, path):
        self.nib = nib
        lib = nib.lib
        err = _Error()
        self.ptr = lib.nib_model_load(path.encode(), ctypes.byref(err))
        if not self.ptr:
            raise NibError(f"nib_model_load({path}): {err.text()}")
        head = _ModelHead.from_address(self.ptr)
        self.arch = head.arch_name.decode()
        self.n_vocab = head.n_vocab
        self.tok = lib.nib_tokenizer_load(head.gguf, ctypes.byref(err))
        if not self.tok:
            lib.nib_model_free(self.ptr)
            self.ptr = None
            raise NibError(f"nib_tokenizer_load({path}): {err.text()}")
        self.tok_n_vocab = lib.nib_tokenizer_n_vocab(self.tok)
        self.bos = lib.nib_tokenizer_bos(self.tok)
        self.eos = lib.nib_tokenizer_eos(self.tok)

    def tokenize(self, text, add_special=True, parse_special=True):
        b = text.encode("utf-8")
        ids = ctypes.POINTER(ctypes.c_int32)()
        n = ctypes.c_int64(0)
        err = _Error()
        st = self.nib.lib.nib_tokenize(self.tok, b, len(b), add_special, parse_special, ctypes.byref(ids),
                                       ctypes.byref(n), ctypes.byref(err))
        if st != 0:
            raise NibError(f"nib_tokenize: {err.text()}")
        out = [int(ids[i]) for i in range(n.value)]
        if ids:
            self.nib.libc.free(ctypes.cast(ids, ctypes.c_void_p))
        return out

    def piece(self, tok_id, special=True):
        buf = ctypes.create_string_buffer(256)
        n = self.nib.lib.nib_token_to_piece(self.tok, tok_id, special, buf, 256)
        return buf.raw[:min(n, 256)]

    def detokenize(self, ids):
        return b"".join(self.piece(i) for i in ids).decode("utf-8", errors="replace")

    def context(self, n_ctx=2048, n_batch=512, n_threads=2, kv_f32=False, device=0):
        return Context(self, n_ctx, n_batch, n_threads, kv_f32, device)

    def close(self):
        if self.tok:
            self.nib.lib.nib_tokenizer_free(self.tok)
            self.tok = None
        if self.ptr:
            self.nib.lib.nib_model_free(self.ptr)
            self.ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Context:
    def __init__(self, model, n_ctx, n_batch, n_threads, kv_f32, device=0):
        self.model = model
        self.lib = model.nib.lib
        self.n_vocab = model.n_vocab
        p = _CtxParams(n_ctx, n_batch, n_threads, kv_f32, device)
        err = _Error()
        self.ptr = self.lib.nib_ctx_new(model.ptr, ctypes.byref(p), ctypes.byref(err))
        if not self.ptr:
            raise NibError(f"nib_ctx_new: {err.text()}")

    def decode(self, ids, all_logits=False):
        """Run ids at the next positions. all_logits: return (len(ids), n_vocab) float32."""
        n = len(ids)
        arr = (ctypes.c_int32 * n)(*ids)
        out = None
        outp = None
        if all_logits:
            out = np.empty((n, self.n_vocab), dtype=np.float32)
            outp = out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        err = _Error()
        st = self.lib.nib_ctx_decode(self.ptr, arr, n, outp, ctypes.byref(err))
        if st != 0:
            raise NibError(f"nib_ctx_decode: {err.text()}")
        return out

    def logits(self):
        p = self.lib.nib_ctx_logits(self.ptr)
        return np.ctypeslib.as_array(p, shape=(self.n_vocab,)).copy()

    def pos(self):
        return self.lib.nib_ctx_pos(self.ptr)

    def truncate(self, pos):
        self.lib.nib_ctx_truncate(self.ptr, pos)

    def greedy(self, prompt_ids, n):
        """Greedy continuation of n tokens after prompt_ids (appended at the current position)."""
        self.decode(prompt_ids)
        out = []
        for _ in range(n):
            t = int(np.argmax(self.logits()))
            out.append(t)
            self.decode([t])
        return out

    def close(self):
        if self.ptr:
            self.lib.nib_ctx_free(self.ptr)
            self.ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

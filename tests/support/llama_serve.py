"""`python -m llama_cpp.server` with llama.cpp's extra buffer types off: run as a script, same arguments.

llama.cpp built natively on a CPU that reports AMX repacks the weights for AMX tiles (an "extra buffer type")
and multiplies with them; in a virtual machine that lists AMX but does not let a process configure its tiles
(seen on a Firecracker VM, 2026-12) the first request kills the server with a general protection fault at
`ldtilecfg` in libggml-cpu. Keeping the weights in their plain buffers avoids that path on every machine;
the server's own command line has no switch for it, so this sets the model's default parameters before the
server reads them.
"""

from __future__ import annotations

import runpy
import sys

import llama_cpp.llama_cpp as bindings

_plain_defaults = bindings.llama_model_default_params


def _without_extra_buffers() -> bindings.llama_model_params:
    params = _plain_defaults()
    params.use_extra_bufts = False
    return params


if __name__ == "__main__":
    bindings.llama_model_default_params = _without_extra_buffers  # read by llama_cpp.Llama at load
    sys.argv = ["llama_cpp.server", *sys.argv[1:]]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)

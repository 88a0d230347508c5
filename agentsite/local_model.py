"""`python -m agentsite.local_model MODEL.gguf --port N`: llama.cpp's OpenAI-compatible server
for one GGUF model, through the `xllamacpp` wheel (no compiler, no separate server to install),
until it is told to stop. The launcher runs it as one more supervised process when
AGENTSITE_LOCAL_MODEL names a model; the real-model tests start it the same way.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentsite.local_model", description=__doc__)
    parser.add_argument("model", type=Path, help="a GGUF file of an instruct model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument(
        "--ctx", type=int, default=16384, help="context window in tokens, shared by the slots"
    )
    parser.add_argument("--parallel", type=int, default=2, help="requests served at once")
    parser.add_argument(
        "--temperature", type=float, default=None, help="sampling temperature (0: greedy)"
    )
    parser.add_argument("--seed", type=int, default=None, help="fixed sampling seed")
    parser.add_argument("--alias", help="the model id it answers to (default: the file's stem)")
    args = parser.parse_args(argv)
    if not args.model.is_file():
        print(f"No model file at {args.model}", file=sys.stderr)
        return 2
    try:
        import xllamacpp
    except ImportError:
        print("xllamacpp is not installed: pip install -e '.[local]'", file=sys.stderr)
        return 2

    params = xllamacpp.CommonParams()
    params.model.path = str(args.model)
    params.model_alias = {args.alias or args.model.stem}  # what replies name, not its path
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = args.parallel
    params.use_jinja = True  # the model's own chat template, with its tool-calling format
    params.cpuparams.n_threads = os.cpu_count() or 2
    if args.temperature is not None:
        params.sampling.temp = args.temperature
    if args.seed is not None:
        params.sampling.seed = args.seed
    params.verbosity = 1  # errors only: llama.cpp's info lines would bury the launcher's log
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:  # the extension raises plain exceptions for a bad file
        print(f"Could not load {args.model}: {exc}", file=sys.stderr)
        return 1
    print(f"Serving {args.model.name} at {server.listening_address}/v1", flush=True)
    stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())

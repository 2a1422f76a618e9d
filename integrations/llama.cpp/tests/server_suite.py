#!/usr/bin/env python3
"""llama.cpp's own llama-server test suite (tools/server/tests, pytest) with a cache type.

  server_suite.py --bin DIR --model GGUF --tests DIR --out FILE [--cache TYPE] [FILE.py ...]

Runs the named test files of llama.cpp's suite on one local model (its tests name
models that they download; every server they start gets --model GGUF instead, the same
model as its own draft, -ctk/-ctv TYPE and flash attention on) and writes each test's
outcome to FILE as JSON.  llamacpp_test.py suite runs it for q4_0 and tq4 and compares.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import types
from pathlib import Path


class Plugin:
    """Points every ServerProcess at the local model and the cache type, records outcomes."""

    def __init__(self, model, cache):
        self.model, self.cache, self.outcomes = model, cache, {}

    def pytest_configure(self, config):
        import utils  # llama.cpp's tests/utils.py, on the path by then
        model, cache = self.model, self.cache
        start = utils.ServerProcess.start

        def start_local(server, *args, **kwargs):
            server.model_hf_repo = server.model_hf_file = server.model_url = None
            server.model_file = model
            if server.model_draft:
                server.model_draft = model
            server.ctk = server.ctv = cache
            server.fa = "on"  # a quantized V cache needs it (llama.cpp refuses q4_0's without)
            return start(server, *args, **kwargs)
        utils.ServerProcess.start = start_local
        utils.ServerPreset.load_all = staticmethod(lambda: None)  # nothing to download
        utils.download_file = lambda *args, **kwargs: model     # (the draft models)

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            self.outcomes[report.nodeid] = report.outcome


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--tests", required=True, help="llama.cpp's tools/server/tests")
    p.add_argument("--out", required=True)
    p.add_argument("--cache", default="tq4")
    p.add_argument("--deps", help="where scripts/setup-llamacpp.sh installed the suite's Python packages")
    p.add_argument("-k", dest="keyword", help="pytest's -k: the tests to run of the files named")
    p.add_argument("files", nargs="*")
    args = p.parse_args()
    if args.deps:
        sys.path.insert(0, str(Path(args.deps).resolve()))
    sys.modules["wget"] = types.ModuleType("wget")  # its downloads are replaced by the local model
    import pytest
    os.environ["LLAMA_SERVER_BIN_PATH"] = str(Path(args.bin).resolve() / "llama-server")
    out = Path(args.out).resolve()
    plugin = Plugin(str(Path(args.model).resolve()), args.cache)
    # A copy of the suite, with the tmp/ folder its servers write slots and caches to.
    work = tempfile.TemporaryDirectory()
    tests = Path(work.name) / "tests"
    shutil.copytree(args.tests, tests)
    (tests / "tmp").mkdir(exist_ok=True)
    os.chdir(tests)
    sys.path.insert(0, str(tests))
    pytest.main(["-q", "-s", "-p", "no:cacheprovider", *(["-k", args.keyword] if args.keyword else []),
                 *[f"unit/{f}" for f in args.files]],
                plugins=[plugin])
    out.write_text(json.dumps(plugin.outcomes, indent=1))


if __name__ == "__main__":
    main()

"""Optional compiled accelerators (aiokafka's pattern: its setup.py and AIOKAFKA_NO_EXTENSIONS).

Everything else is in pyproject.toml. rocketq.common.record._crecord (the record codec) and
rocketq.remoting.protocol._cheader (the msgpack header codec), rocketq.spark._carrow (the Spark
source's column gathering), rocketq.remoting.acl._csign (the ACL signature's HMAC-SHA1 through OpenSSL's SHA-1) and
rocketq.store._cpull (the pull's loop over consume-queue units) are built from their .pyx with
Cython when a C compiler is there; when the build fails (no compiler, no Python headers) the install
goes on without it, says so, and rocketq runs on the pure-Python record functions. ROCKETQ_NO_EXTENSIONS=1
at install time skips the build.
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NO_EXTENSIONS = os.environ.get("ROCKETQ_NO_EXTENSIONS", "") not in ("", "0")
SOURCES = {
    "rocketq.common.record._crecord": "src/rocketq/common/record/_crecord.pyx",
    "rocketq.remoting.protocol._cheader": "src/rocketq/remoting/protocol/_cheader.pyx",
    "rocketq.spark._carrow": "src/rocketq/spark/_carrow.pyx",
    "rocketq.remoting.acl._csign": "src/rocketq/remoting/acl/_csign.pyx",
    "rocketq.store._cpull": "src/rocketq/store/_cpull.pyx",
}

# _csign calls OpenSSL's SHA-1 (the libcrypto Python's hashlib uses): its headers are needed to build it.
# SHA1_Init/Update/Final are deprecated in OpenSSL 3 in favour of EVP, whose context copies allocate;
# they are still exported, and the warning is silenced.
LINKED = {
    "rocketq.remoting.acl._csign": {
        "libraries": ["crypto"],
        "define_macros": [("OPENSSL_SUPPRESS_DEPRECATED", None)],
    },
}


class OptionalBuildExt(build_ext):
    """build_ext that turns a failed compile into a message instead of a failed install."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler (setuptools raises several error kinds for it)
            self._skipped(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._skipped(exc)

    @staticmethod
    def _skipped(exc: BaseException) -> None:
        print(
            f"rocketq: the compiled record accelerators were not built ({exc}); "
            "using the pure-Python record codec",
            file=sys.stderr,
        )


def extensions() -> list[Extension]:
    if NO_EXTENSIONS:
        print("rocketq: ROCKETQ_NO_EXTENSIONS set, not building the record accelerators", file=sys.stderr)
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("rocketq: Cython not installed, not building the record accelerators", file=sys.stderr)
        return []
    exts = [
        Extension(name, [source], extra_compile_args=["-O2"], **LINKED.get(name, {}))
        for name, source in SOURCES.items()
    ]
    return cythonize(exts, language_level=3, quiet=True)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})

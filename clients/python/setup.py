"""Generates the protobuf messages of proto/amulet/v1/amulet.proto into the
build (amulet/v1/amulet_pb2.py) when the package is built, so the repo holds
no generated code and a `pip install ./clients/python` on a fresh machine
gets messages that match the proto it was built from. An editable install
(`pip install -e .`, as test.sh does) generates them into src/amulet/v1/
instead, which git ignores.

Only the messages are generated: the RPCs the client uses are bound by hand in
amulet/_rpc.py, which spares the runtime a dependency on the exact grpcio
version that grpcio-tools' service stubs would require.
"""

import os
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PROTO_ROOT = Path(os.environ.get("AMULET_PROTO_DIR", HERE.parent.parent / "proto"))
PROTO_FILE = "amulet/v1/amulet.proto"


def generate(out_dir: Path) -> None:
    from grpc_tools import protoc  # a build requirement (pyproject.toml)

    source = PROTO_ROOT / PROTO_FILE
    if not source.is_file():
        raise SystemExit(
            f"{source} not found: build from the Amulet repo, or set AMULET_PROTO_DIR"
        )
    (out_dir / "amulet" / "v1").mkdir(parents=True, exist_ok=True)
    include = Path(protoc.__file__).parent / "_proto"
    code = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"-I{include}",
            f"--python_out={out_dir}",
            f"--pyi_out={out_dir}",
            PROTO_FILE,
        ]
    )
    if code != 0:
        raise SystemExit(f"protoc failed on {source} ({code})")
    (out_dir / "amulet" / "v1" / "__init__.py").write_text(
        '"""Generated from proto/amulet/v1/amulet.proto at build time."""\n'
    )


class BuildWithProto(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            # `pip install -e .`: the package is imported from src/, so the
            # messages go there (src/amulet/v1/ is ignored by git).
            generate(HERE / "src")
        else:
            generate(Path(self.build_lib))


setup(cmdclass={"build_py": BuildWithProto})

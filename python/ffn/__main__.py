"""`python -m ffn ARGS…` runs the ffn command (`ffn --help` lists its subcommands).

The command is a program of its own, found beside the package: ffn/bin/ffn in a wheel
(`pip install .`) and in the build tree (a link to build/tools/ffn/ffn), or <prefix>/bin/ffn
after `cmake --install` (the package then lies in <prefix>/lib/python3/dist-packages/ffn).
FFN_BIN names another. The `ffn` script pip puts on the environment's PATH calls main() too.
"""
import os
import pathlib
import sys


def command_path():
    """The path of the ffn command this package was built with."""
    if os.environ.get("FFN_BIN"):
        return pathlib.Path(os.environ["FFN_BIN"])
    here = pathlib.Path(__file__).resolve().parent
    candidates = [here / "bin" / "ffn"]
    if len(here.parents) >= 4:  # <prefix>/lib*/python3/dist-packages/ffn → <prefix>/bin/ffn
        candidates.append(here.parents[3] / "bin" / "ffn")
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("the ffn command is not installed beside the ffn package (looked for "
                            + ", ".join(map(str, candidates)) + "); set FFN_BIN to its path")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        path = command_path()
    except FileNotFoundError as e:
        print(f"ffn: {e}", file=sys.stderr)
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [str(path), *argv])


if __name__ == "__main__":
    sys.exit(main())

"""`python -m sandbox.image build`: build (or reuse) the sandbox image and print its tag."""

import argparse
import sys

from sandbox.image.build import ensure_image, sandbox_tag


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.image")
    parser.add_argument("command", choices=["build", "tag"])
    args = parser.parse_args(argv)
    if args.command == "tag":
        print(sandbox_tag())
        return 0
    print(ensure_image(verbose=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
